"""AppTest of the router: every page is reachable from dashboard.py."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import dashboard

PAGES = {
    "app_pages/overview.py": "Overview",
    "app_pages/occupation_explorer.py": "Occupation explorer",
    "app_pages/influential_triples.py": "Influential triples",
    "app_pages/person.py": "Person",
    "app_pages/embedding_space.py": "Embedding space",
    "app_pages/attributes.py": "Attributes (Fisher et al.)",
    "app_pages/debiasing_lab.py": "Debiasing lab",
    "app_pages/validation.py": "Validation",
    "app_pages/findings.py": "Findings",
    "app_pages/model_comparison.py": "Model comparison",
}


def test_dashboard_routes_to_every_page(writable_store: Path) -> None:
    app = dashboard().run()
    assert not app.exception
    assert app.title[0].value == "Overview"
    for script, title in PAGES.items():
        app.switch_page(script).run()
        assert not app.exception, script
        assert app.title[0].value == title
