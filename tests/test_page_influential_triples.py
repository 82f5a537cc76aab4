"""AppTest of the Influential triples page: both directions, filters, the removal basket."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import NO_WOMEN, button, metric, page, texts


def test_influential_triples_and_the_removal_basket(app_store: Path) -> None:
    app = page("influential_triples").run()
    app.selectbox(key="occupation").set_value("nurse").run()
    assert not app.exception
    assert [s.value for s in app.subheader][:2] == [
        "Removing these raises B_gr (towards male-leaning)",
        "Removing these lowers B_gr (towards female-leaning)",
    ]
    assert "empty" in texts(app.info)
    table = app.dataframe[0].value
    assert len(table) == 20 and (table["δ_z B_gr"] > 0).all()
    assert list(table.columns) == ["triple in words", "δ_z B_gr", "person's gender", "person's degree", "relation id",
                                   "triple id"]  # display names, the ids last
    assert not table["triple in words"].str.contains("_").any()  # relations in words
    app.session_state["removal_basket"] = {"tiny-transe": table["triple id"].head(3).tolist()}
    app.run()
    assert not app.exception
    assert metric(app, "Predicted change of B_gr") == "uncalibrated"  # no bare number as the headline
    assert "Not calibrated: Σ δ_z = +" in texts(app.caption)  # removing triples that each raise B_gr raises it
    app.multiselect(key="genders").set_value(["female"]).run()
    assert set(app.dataframe[0].value["person's gender"]) <= {"female"}
    button(app, "Empty the basket").click().run()
    assert not app.exception
    assert "The basket is empty" in texts(app.info)


def test_no_women_warns_on_the_influence_page(app_store: Path) -> None:
    app = page("influential_triples").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "needs at least one man and one woman" in texts(app.warning)
