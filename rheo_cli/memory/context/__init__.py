"""Boot-time context injection (Rheo article, section 07): sections, their sources and the
token budget."""
