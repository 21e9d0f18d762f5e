"""Retrieval with no model call: query analysis, time expressions, relevance scoring and the
RELEVANT HISTORY candidates."""
