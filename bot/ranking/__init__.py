"""Ranking: tf-idf features over stored papers and a per-chat linear model of what it likes.

Pure computation (numpy, scipy, scikit-learn): no storage, no network, no Telegram. Callers run
fitting, training and scoring in a worker thread; none of it awaits anything.

scipy and scikit-learn are imported where first needed, not with these modules: together they
cost every `python -m bot` about a second of CPU at start-up (scipy alone some 0.1 s, numpy's
optional submodules with it), while most start-ups (an operator's command, a restart, a poll)
rank nothing; the first fit, model or /similar pays for them once, in its worker thread. That
they are installed is checked here, so a broken install still stops start-up, not a user's
first /similar.
"""

from importlib.util import find_spec

for _package in ("scipy", "sklearn"):
    if find_spec(_package) is None:
        raise ImportError(f"the ranker needs {_package}, which is not installed: "
                          "pip install -e . installs it", name=_package)
