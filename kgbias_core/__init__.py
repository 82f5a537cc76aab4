"""kgbias_core: gender (and other social) bias in knowledge-graph embeddings.

A UI-free library: load a knowledge graph, train or load embeddings, compute the
bias measures of Du et al. (2022), Fisher et al. (2020), Keidar et al. (2021)
and Schwertmann et al. (2023), and the influence of every training triple.
Sign convention everywhere: a positive bias means male-leaning.
"""

__version__ = "0.1.0"
