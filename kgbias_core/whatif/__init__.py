"""Debiasing what-ifs: edits of the training triples and the runs that retrain on them."""
