"""Memory items (Rheo article, layer 2; Solid# article): the write path, equivalence, events,
decay, pins, the person's corrections, and parsing facts out of a model's reply."""
