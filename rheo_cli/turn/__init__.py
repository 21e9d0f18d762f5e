"""One turn of conversation: store the message, assemble the context, converse with the
model (the tool loop), record the reply; the request layout and the memory tools."""
