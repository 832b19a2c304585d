"""Running engines over labeled sets (``evaluate``) into the one result model (``results``)."""
