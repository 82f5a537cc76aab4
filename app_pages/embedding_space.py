"""Embedding space: persons and occupations on the learned gender direction and the rest's first component."""

from kgbias_app import sidebar, widgets
from kgbias_app.sections.embedding_space import embedding_space

model = sidebar.page_header("Embedding space")

with widgets.errors_shown():
    embedding_space(model)
