"""Sources beside arXiv that add signals to its papers."""
