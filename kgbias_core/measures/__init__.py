"""Bias measures: Du (B_gr, B_in), Fisher (b_p), Keidar (relation audit), Schwertmann (prediction fairness)."""
