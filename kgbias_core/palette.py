"""The colours of every chart, in the app and in the HTML report: one palette, read the same everywhere.

Blue is male-leaning (positive, the sign convention of every measure) and red female-leaning, from
ColorBrewer's diverging RdBu ends, which stay apart for the common colour-vision deficiencies.
"""

from __future__ import annotations

MALE, FEMALE = "#2c7bb6", "#d7191c"
#: A person's gender as the charts colour it ("" and "unknown": no gender fact).
GENDER_COLORS = {"male": MALE, "female": FEMALE, "other": "#7f7f7f", "unknown": "#bdbdbd", "": "#bdbdbd"}
#: The lean of a signed measure.
LEAN_COLORS = {"male-leaning": MALE, "female-leaning": FEMALE}
#: The chosen item against the rest (an occupation among others), and what is drawn but not the point.
HIGHLIGHT, MUTED = "#ff7f0e", "#7f7f7f"
#: A change that is an effect of an edit (beyond the noise band), and a single-series bar.
EFFECT = "#9467bd"
#: The embedding space: persons by gender and the occupations (its "other" purple stays apart from grey points).
SPACE_COLORS = {"male": MALE, "female": FEMALE, "other": "#7b3294", "unknown": "#a6a6a6", "occupation": "#1a1a1a"}
