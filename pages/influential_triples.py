"""Influential triples: the training triples whose removal would move an occupation's B_gr most."""

import streamlit as st

from kgbias_app import cache, sidebar, ui

st.title("Influential triples")
model = sidebar.render()
if model is None:
    st.stop()

COLUMNS = ["in words", "influence", "person_gender", "person_degree", "relation", "triple"]

with ui.errors_shown():
    analysis = cache.analysis(model.path, model.version)
    measures = cache.measures(model.path, model.version)
    occupation, row, defined = ui.occupation_section(measures)
    if not defined:
        st.warning("Influence on B_gr needs at least one man and one woman: pick another occupation.")
        st.stop()

    k = st.slider("Triples per direction", 5, 100, 20, key="top_k")
    extremes = ui.triples_in_words(cache.influence_extremes(model.path, model.version, occupation, k))
    left, right = st.columns(2)
    relations = left.multiselect("Relations (none = all)", sorted(extremes["relation"].unique()), key="relations")
    genders = right.multiselect("Person's gender (none = all)", ["male", "female", "other", "unknown"], key="genders")
    shown = ui.filter_triples(extremes, relations=relations, genders=genders)
    st.caption(
        "δ_z B_gr is Du et al.'s influence (Eq. 3) of one training triple on this occupation's B_gr: > 0 "
        "means that retraining without the triple raises B_gr (more male-leaning). Select rows to put "
        "them in the removal basket."
    )
    selected: list[int] = []
    for direction, title in (
        ("raises", "Removing these raises B_gr (towards male-leaning)"),
        ("lowers", "Removing these lowers B_gr (towards female-leaning)"),
    ):
        st.subheader(title)
        part = shown[shown["direction"] == direction]
        event = st.dataframe(
            part[COLUMNS], hide_index=True, on_select="rerun", selection_mode="multi-row", key=f"triples:{direction}"
        )
        selected += part["triple"].iloc[event.selection.rows].tolist()
    ui.download(shown, f"{model.name}-{occupation}-influential.csv".replace("/", "_"), key="extremes:csv",
                label="Download these triples (CSV)")
    if st.button(f"Add {len(selected)} selected triple(s) to the removal basket", disabled=not selected):
        ui.add_to_basket(model.name, selected)

    st.subheader("Influence against degree (Du Fig 1)")
    ranked = ui.triples_in_words(cache.influence_table(model.path, model.version, occupation, 5000))
    ui.show_chart(
        ui.influence_degree_scatter(ranked), ranked,
        caption=f"The {len(ranked):,} triples with the largest |δ_z B_gr| (all with non-zero influence, at most "
        "5,000), against the degree of the person in them. Du et al. find the most influential triples "
        "at persons of low degree: their embeddings rest on few triples.",
        file_name=f"{model.name}-{occupation}-influence.csv".replace("/", "_"),
        key="influence_degree",
    )

    share = cache.occupation_relation_share(model.path, model.version, occupation)
    st.metric("Occupation relations among the top 1% of triples", f"{share['share']:.0%}")
    st.caption(
        f"{share['n_occupation']} of the {share['n_top']} training triples with the largest |δ_z B_gr| (the top "
        "1%, or all with non-zero influence if fewer) use an occupation-like relation. Counted: "
        f"{', '.join(share['relations'])}: the schema's occupation relation and every relation with the word "
        "'profession' or 'occupation' in its label. Du et al. report ~74% occupation and inverse-occupation "
        "triples on FB5M."
    )

    st.subheader("Removal basket")
    chosen = ui.basket(model.name)
    if not chosen:
        st.info("The basket is empty: select triples in the tables above and add them.")
    else:
        basket_frame = ui.triples_in_words(cache.triples_frame(model.path, model.version, tuple(chosen)))
        st.dataframe(basket_frame[["in words", "person_gender", "person_degree", "triple"]], hide_index=True)
        change = cache.predicted_removal(model.path, model.version, occupation, tuple(chosen))
        st.metric(ui.removal_label(analysis.model.influence_scale), ui.fmt(change),
                  help="Sum of δ_z B_gr over the basket (METHODS §4).")
        st.caption(
            f"Removing these {len(chosen)} triple(s) and retraining would move {row['name']}'s B_gr from "
            f"{ui.fmt(row['group_bias'])} by about {ui.fmt(change)} ({ui.SIGN})."
            + (" Uncalibrated: trust the sign and the ranking, not the size." if
               analysis.model.influence_scale is None else "")
        )
        ui.download(basket_frame, f"{model.name}-basket.csv", key="basket:csv", label="Download the basket (CSV)")
        if st.button("Empty the basket"):
            ui.clear_basket(model.name)
            st.rerun()
