"""Search quality: the default search finds what it must find (slow ones marked)."""
