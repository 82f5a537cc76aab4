"""Person: one person's B_in and B'_in with the counterfactual, and their training triples with influence."""

from kgbias_app import sidebar, widgets
from kgbias_app.sections.person import person_view

model = sidebar.page_header("Person")

with widgets.errors_shown():
    person_view(model)
