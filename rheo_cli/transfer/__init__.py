"""Data in and out: every file format rheo reads or writes, and one registry of them.

``rheo import`` recognises what it is given by content (`formats`, the one registry): rheo's
own export (`rheo_jsonl`, which ``rheo export`` and ``rheo backup`` on PostgreSQL also write),
the llm CLI's logs.db (`llm`, its SQL in `llm_logs`, the file opened read-only), a ChatGPT
export (`chatgpt`: the zip, its folder, conversations.json or one conversations-NNN.json) and
a Claude.ai export (`claude_ai`). A `source.Source` is what was given (a file, folder, zip or
stdin); `history` holds what the readers of other programs' chat share.

Nothing here touches rheo's store: records and parsed history go to the engine
(`rheo_cli.memory.archive`), which decides what is new, what a purge erased, and writes it in
one transaction.
"""
