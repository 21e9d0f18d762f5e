"""``rheo doctor``'s checks and ``--repair``, on SQLite (`sqlite`) and PostgreSQL (`postgres`)."""
