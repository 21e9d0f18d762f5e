"""The warm side of the resident rheo, run only in the resident's own process and the
processes it forks: `server` (the listening loop: ``python -m rheo_cli.resident.warm.server
RHEO_HOME``), `child` (one request, or one hand-off of memory work, in a forked process) and
`background` (the memory work: the queued jobs, then the session watcher). It imports the rest
of rheo; the thin side (`rheo_cli.resident`) never imports it.
"""
