"""Attributes (Fisher et al.): professions most associated with one value of an attribute vs another."""

import streamlit as st

from kgbias_app import cache, sidebar, ui

st.title("Attributes (Fisher et al.)")
model = sidebar.render()
if model is None:
    st.stop()

REST = "__rest__"

with ui.errors_shown():
    stored = cache.analysis(model.path, model.version).model
    options = ui.attribute_options(stored.schema, stored.relation_labels)
    relation = st.selectbox("Attribute relation", list(options), format_func=options.__getitem__, key="attribute")
    values = cache.attribute_values(model.path, model.version, relation)
    titles, names = ui.value_titles(values), dict(zip(values["label"], values["name"], strict=True))
    labels = list(titles)
    is_gender = relation == "gender"
    left, middle, right = st.columns(3)
    value_a = left.selectbox(
        "Value a", labels, format_func=titles.__getitem__, key=f"value_a:{relation}",
        index=labels.index(stored.schema.male) if is_gender and stored.schema.male in labels else 0,
    )
    others = [REST] + [v for v in labels if v != value_a]
    value_b = middle.selectbox(
        "Value b", others, key=f"value_b:{relation}",
        format_func=lambda v: "all other values (one vs rest)" if v == REST else titles[v],
        index=others.index(stored.schema.female) if is_gender and stored.schema.female in others else 0,
    )
    min_count = right.slider("Minimum a- plus b-persons per profession", 0, 500, 20, key="min_count")
    a_name, b_name = names[value_a], "the other values" if value_b == REST else names[value_b]

    table = cache.fisher_table(
        model.path, model.version, relation, value_a, None if value_b == REST else value_b, min_count
    )
    st.caption(
        f"b_p (Fisher §3.2): the mean change of each profession's plausibility when every person's embedding "
        f"takes a small step towards '{a_name}' and away from '{b_name}'. > 0: associated with {a_name}. "
        f"Professions with fewer than {min_count} {a_name}- plus {b_name}-persons are left out "
        f"({len(table)} kept)."
    )
    if table.empty:
        st.warning("No profession has that many persons with these values: lower the minimum count.")
        st.stop()
    columns = {"name": "profession", "bias": "b_p", "n_a": f"# {a_name}", "n_b": f"# {b_name}"}
    top_a, top_b, fallback = ui.fisher_sides(table, k=20)
    left, right = st.columns(2)
    left.subheader(f"Most associated with {a_name}")
    left.dataframe(top_a[list(columns)].rename(columns=columns), hide_index=True)
    right.subheader(f"Least associated with {a_name}" if fallback else f"Most associated with {b_name}")
    if fallback:
        right.info(f"No profession has b_p < 0: moving persons towards {a_name} raises every profession's "
                   "plausibility (a shared offset). Listed: the professions it raises least.")
    right.dataframe(top_b[list(columns)].rename(columns=columns), hide_index=True)

    ui.show_chart(
        ui.fisher_bars(top_a, top_b, a_name=a_name, b_name=b_name),
        table,
        caption=f"The professions of the two tables: bars to the right lean towards {a_name}, to the left "
        f"towards {b_name}. The download holds every profession kept by the minimum count.",
        file_name=f"{model.name}-fisher-{relation}.csv".replace("/", "_"),
        key="fisher_bars",
    )
