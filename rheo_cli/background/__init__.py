"""Background memory work: fact extraction after each reply and digests of closed sessions.

Jobs are rows in the store (see `memory.jobs`); a detached worker process runs them after the
reply has been shown, so the person never waits, and `rheo maintain` runs them in the
foreground. If every extractor fails, the exchange simply isn't extracted yet: the job waits
and is retried a bounded number of times.
"""
