"""Influence of training triples on B_gr: the closed form, iterative solvers, checks by retraining."""
