"""The library: saved papers and the group library rule."""
