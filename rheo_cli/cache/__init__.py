"""Caches in front of the store (optional): the Redis hot cache of CURRENT MEMORY."""
