"""Ranking: tf-idf features over stored papers and a per-chat linear model of what it likes.

Pure computation (numpy, scipy, scikit-learn): no storage, no network, no Telegram. Callers run
fitting, training and scoring in a worker thread; none of it awaits anything.
"""
