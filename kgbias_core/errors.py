"""Every user-facing error of kgbias_core: exception classes and message constants.

Messages name the problem (file, line, relation, entity) so that a user can fix it;
tests check their text, pages show them with ``st.error``.
"""


class KGBiasError(Exception):
    """Base class: an error the user can act on (bad input, missing data, bad request)."""


class DataError(KGBiasError):
    """A data file is missing, malformed or inconsistent with the schema."""


class SchemaError(KGBiasError):
    """The schema names a relation or entity the graph lacks, or is itself malformed."""


class ModelStoreError(KGBiasError):
    """A cached model is missing, incomplete or inconsistent."""


class MeasureError(KGBiasError):
    """A measure was asked for something it cannot compute (unknown occupation, empty group)."""


class TooLargeError(KGBiasError):
    """Work refused up front: it would not finish in reasonable time on this machine."""


class CancelledError(KGBiasError):
    """A long job (training, evaluation) was cancelled by the user."""


# --- data files -------------------------------------------------------------------
MISSING_FILE = "{path}: file not found"
EMPTY_FILE = "{path}: the file holds no triples"
MALFORMED_LINE = (
    "{path}, line {line}: expected 3 tab-separated columns (head, relation, tail), found {found}"
)
EMPTY_FIELD = "{path}, line {line}: column {column} is empty"
MALFORMED_NAME_LINE = "{path}, line {line}: expected 'id<TAB>name', found {found} columns"
NOT_UTF8 = "{path}, line {line}: not UTF-8 text (bytes {bad}); save the file as UTF-8"
ID_TOO_LONG = (
    "{path}, line {line}: column {column} is {length:,} characters long; an id has at most {limit:,} "
    "(a missing tab or line break?)"
)
SYNTHETIC_TOO_FEW_TRIPLES = (
    "synthetic: {triples:,} triples cannot hold {persons:,} persons (each has a gender, occupations, a birthplace "
    "and a nationality): give --triples at least {minimum:,} (about 6 per person), or fewer --persons (at least 100)"
)
DATA_DIR_NOT_A_DIRECTORY = "{path} is a file, not a directory: give --data-dir a directory (it is created if missing)"
DATA_DIR_UNWRITABLE = "cannot create the data directory {path}: {reason}"
NO_DATA_DIR = (
    "no {title} data in {path}: expected {path}/{folder}/train.txt. Set KGBIAS_DATA_DIR or --data-dir to "
    "a directory with {folder}/ (and census/). {source}"
)
DOWNLOAD_FAILED = (
    "could not download {url}: {reason}. Without a network, copy the files into {path} by hand "
    "(layout: fb15k237/{{train,valid,test}}.txt, entity_names.tsv, relation_names.tsv)"
)

# --- schema -------------------------------------------------------------------------
UNKNOWN_SCHEMA_RELATION = "schema {role} relation {relation!r} does not occur in the graph {graph}"
SCHEMA_ROLES_EQUAL = "{a} and {b} are both {value!r}: each role needs its own value"
SCHEMA_ATTRIBUTE_GENDER = (
    "{where} ({name!r}) is gender, which the schema's gender_relation already is: the attributes are the other "
    "sensitive relations (nationality, religion, ...)"
)
SCHEMA_ATTRIBUTE_TWICE = "two attributes are named {name!r} ({first} and {second}): give each its own name"
UNKNOWN_SCHEMA_ENTITY = "schema {role} entity {entity!r} does not occur in the graph {graph}"
NO_GENDER_FACTS = (
    "the graph {graph} has no training triple with the gender relation {relation!r} and a "
    "male ({male!r}) or female ({female!r}) tail: no gender measure can be computed"
)
BAD_SCHEMA_FILE = "{path}: {problem}"
SCHEMA_NOT_A_TABLE = "the top level must be a table of keys (a JSON object), found {found}"
SCHEMA_BAD_VALUE = "{key} must be {expected}, found {found}"
UNKNOWN_DATASET = (
    "{dataset!r} is neither a data set ({names}) nor a file or folder of triples: check the name or the path"
)
NO_SCHEMA = (
    "{path}: a user graph needs a schema naming the gender relation, its male and female values "
    "and the occupation relation: pass --schema FILE.toml or put schema.toml beside the triples"
)

# --- model store -------------------------------------------------------------------
MODEL_NOT_FOUND = "no model at {path}: expected config.json and model.safetensors there"
MODEL_INCOMPLETE = "{path}: incomplete model directory, missing {missing}"
MODEL_CORRUPT = "{path}: {problem}"
OUT_NOT_A_MODEL = (
    "{path} exists and is not a kgbias model directory: refusing to replace it (nothing was written); "
    "choose another --out"
)
OUT_EXISTS = "{path} already holds a model: pass --force to replace it (nothing was written)"
OUT_IS_INPUT = "{path} is the model being read (--model): a what-if is written under another name"
OUT_BAD_NAME = (
    "{name!r} is not a model name: use letters, digits, '.', '_' and '-' (no path separators, not '.' or '..')"
)
MODEL_WRITE_FAILED = "{path}: could not write the model ({reason}); nothing was replaced, the previous model is intact"
MODEL_BEING_WRITTEN = (
    "{path} is being written by another kgbias process (pid {pid}): wait for it to finish or choose another "
    "--out (nothing was written)"
)
MODEL_DISAGREES = "{path}: the model's files disagree: {problem}; retrain or re-import it"
MODEL_FILE_LINK = (
    "{path} is a symbolic link ({target}): a model's files must be its own, or the model would mix another "
    "model's settings or weights with its own; copy the file instead"
)
NON_FINITE_WEIGHTS = "{path}: tensor {tensor!r} holds {count} NaN or infinite values; retrain the model"

# --- measures -----------------------------------------------------------------------
UNKNOWN_ENTITY = "unknown entity {entity!r}: it does not occur in the model's graph"
UNKNOWN_RELATION = "unknown relation {relation!r}: it does not occur in the model's graph"
NOT_AN_OCCUPATION = (
    "{entity!r} is not an occupation: no training triple links a person to it by {relation!r}"
)
NOT_A_PERSON = (
    "{entity!r} is not a person: it has no gender and no occupation fact in the training triples"
)
UNKNOWN_PERSON = "no person is named {name!r}: search by a part of the name, or give the id"
AMBIGUOUS_PERSON = "{name!r} names {count} persons: {candidates}; give the id instead"
NO_GENDER_DIRECTION = "the gender direction needs at least one man and one woman with an embedding"
AMBIGUOUS_OCCUPATION = (
    "{name!r} names {count} occupations: {candidates}; give the id (the first column) instead"
)
EMPTY_GROUP = (
    "occupation {occupation!r} has {n_male} male and {n_female} female persons: "
    "{measure} needs at least one of each"
)
CANCELLED = "cancelled by the user after epoch {epoch}"
#: What a cancelled or failed training, what-if or computation keeps (said after its error).
PREPARE_NO_DATA = (
    "prepare: no {dataset} in the data directory {data_dir}: set --data-dir or $KGBIAS_DATA_DIR to the folder "
    "holding {dataset}/train.txt (or fetch it with 'kgbias download --dataset {dataset}')"
)
NOTHING_SAVED = "Nothing was saved under a model's name: the store is unchanged."
CALIBRATION_CANCELLED = "calibration was cancelled after run {done} of {total}"
CALIBRATION_KEPT = "The model {name} was saved and stays in use, uncalibrated; its calibration can be started again."
ADD_NOTHING = (
    "Add on {occupation!r} with c = {c} adds no dummy: it has {n_male} men and {n_female} women "
    "(c·| |M| − |F| | rounds to 0)"
)
ADD_ONE_GENDER = (
    "Add on {occupation!r} is refused: it has {n_male} men and {n_female} women, and B_gr compares the two "
    "groups, so it is undefined before and after any number of dummies (nothing was retrained)"
)
REMOVE_NOTHING = "nothing to remove: the removal set is empty"
REMOVE_OUT_OF_RANGE = "removal set names a triple outside the model's {n} training triples"
UNKNOWN_EDIT_STRATEGY = "unknown edit strategy {strategy!r}: choose one of {known}"
NO_NEGATIVES = (
    "model {model!r} has no frozen negatives: influence needs TransE trained by kgbias (METHODS §2)"
)
UNKNOWN_MODEL = "unknown model {model!r}: choose one of {known}"
UNKNOWN_OPTIMIZER = "unknown optimizer {optimizer!r}: choose one of {known}"
DISTANCE_NOT_TRANSE = (
    "distance {distance}: only TransE trains with a distance of its choice ({model} scores through PyKEEN); leave "
    "--distance out"
)
NEGATIVES_NOT_TRANSE = (
    "{count} negatives per triple: only TransE trains on frozen negatives ({model} draws its own through PyKEEN); "
    "leave --negatives at 1"
)
UNKNOWN_DISTANCE = "unknown distance {distance!r}: choose one of {known}"
UNKNOWN_CORRUPTION = "unknown corruption {corruption!r}: choose one of {known}"
UNKNOWN_NEGATIVE_ENTITIES = "unknown negative entities {draw!r}: choose one of {known}"
NEGATIVE_ENTITIES_NOT_TRANSE = (
    "negative entities {draw}: only TransE trains on frozen negatives ({model} draws its own through PyKEEN); leave "
    "--negative-entities out"
)
CORRUPTION_NOT_TRANSE = (
    "corruption {corruption}: only TransE trains on frozen negatives ({model} draws its own through PyKEEN); leave "
    "--corruption out"
)
NO_NEGATIVES_IMPORTED = (
    "model {model!r} was imported from {source} and has no frozen negatives: every retrain (what-if, noise band, "
    "calibration) needs each training triple's negative (METHODS §2), and retraining belongs to the engine that "
    "trained it. Influence works with re-drawn negatives (approximate); B_gr, B_wo, B_in, B'_in, b_p, link "
    "prediction, audit and fairness work on it"
)
NOT_TRANSE = (
    "model {model!r} is {kind}: Du's B_gr, B_in, influence and what-ifs measure the translational distance "
    "psi = dist(h + r, t) of TransE, which this model's score is not; pick a TransE model for them "
    "(Fisher's b_p, the relation audit and prediction fairness take every kind)"
)

# --- intersections (B_gr within the subpopulations of an attribute) -------------------------------
UNKNOWN_ATTRIBUTE = "unknown attribute {name!r}: the schema's attributes are {known}"
NO_ATTRIBUTES = "unknown attribute {name!r}: the schema of this graph names no attribute (nationality, religion, ...)"
INTERSECT_ONE_VALUE = (
    "values a and b go together: give both (the two subpopulations to compare) or neither (the two largest are "
    "compared)"
)
INTERSECT_SAME_VALUE = "values a and b are the same value {value!r}: the test compares two different subpopulations"
INTERSECT_VALUE_NOT_HELD = (
    "no person of occupation {occupation!r} holds the {attribute} value {value!r}: choose a value listed in "
    "the table (run without values a and b to see them)"
)

# --- fisher / audit / fairness -----------------------------------------------------------
FISHER_NOT_SINGLE_REPRESENTATION = (
    "{model} has {n_entity} entity and {n_relation} relation representations: Fisher's bias "
    "score needs exactly one of each (one embedding e_j per person to move)"
)
FISHER_BAD_STEP = "Fisher's step must be a positive number, got {step}"
FISHER_EMPTY_IDS = "Fisher's bias score needs at least one id in {what}, got none"
FISHER_NO_OTHER_VALUE = (
    "value {value!r} of relation {relation!r}: one-vs-rest needs at least one other value of the "
    "relation (other_values is empty) or an explicit value_b"
)
FISHER_VALUE_IS_OTHER = (
    "value {value!r} of relation {relation!r} is also listed among other_values: one-vs-rest "
    "compares a value with the OTHER values only"
)
FISHER_BAD_SIDE = "toward must be 'a' or 'b', got {toward!r}"
FISHER_SAME_VALUE = "values a and b are the same entity ({value}): b_p compares two different values"
FISHER_VALUE_NOT_HELD = (
    "no person holds value {side} of this attribute relation: b_p would measure a value nobody has; "
    "choose a value that some person holds"
)
AUDIT_BAD_CLASSIFIER = "unknown occupation classifier {kind!r}: expected 'random_forest' or 'mlp'"
AUDIT_TOO_FEW_PERSONS = (
    "the occupation classifier needs persons of at least two occupation classes with two persons "
    "each; got {n_persons} persons in {n_classes} classes"
)
AUDIT_SHAPE_MISMATCH = "{what}: expected {expected} entries, got {found}"
AUDIT_BAD_K = "the number of occupation classes k must be at least 1, got {k}"
AUDIT_CANCELLED = "relation audit of {model} cancelled by the user after {done} of {total} relations"
FAIRNESS_BAD_GROUPS = "gender groups must be two different labels, got {groups!r}"
FAIRNESS_NO_FACTS = (
    "no test fact has a person whose gender is one of {groups!r}: no fairness metric can be "
    "computed"
)
FAIRNESS_SHAPE_MISMATCH = (
    "y_true, y_pred and gender must have the same length, got {n_true}, {n_pred} and {n_gender}"
)
FAIRNESS_BAD_CONFIDENCE = "confidence must lie strictly between 0 and 1, got {confidence}"
FAIRNESS_FEW_CLASSES = (
    "warning: {model}: with --min-count {min_count} only {n_classes} occupation(s) have a class of their own "
    "(the rest is pooled as OTHER), so DPG/PPG/EOG compare almost nothing; lower --min-count"
)
RANKS_EMPTY = "no ranks given: MRR and Hits@k need at least one test triple"
TRIPLES_BAD_SHAPE = "{what}: expected an integer tensor of shape [n, 3], got shape {shape}"

# --- jobs / census / download ------------------------------------------------------------


class JobError(KGBiasError):
    """A background job was asked for something it does not have (unknown id, no result)."""


JOB_UNKNOWN = "unknown job {job_id!r}: it was never submitted to this registry"
JOB_NO_RESULT = "job {job_id!r} ({name}) is {state}: it has no result{detail}"
JOB_RESULT_EVICTED = (
    "the result of job {job_id!r} ({name}) was dropped to bound memory (only the {keep} most "
    "recent results are kept): run it again"
)
JOB_FAILED = "failed: {exc_type}: {message}"
JOB_REGISTRY_CLOSED = "the job registry is shut down: job {name!r} cannot be submitted"
JOB_BAD_KEEP = "max_results must be at least 1, got {keep}"
CENSUS_MISSING_COLUMNS = "{path}: missing columns {missing}; expected {expected}"
CENSUS_MALFORMED_ROW = "{path}, line {line}: {problem}"
CENSUS_EMPTY = "{path}: the file holds no census rows"
CENSUS_UNKNOWN_YEAR = "{path}: no census year {year}; available years: {years}"
CENSUS_DUPLICATE = "{path}, line {line}: occupation {occupation!r} appears twice in year {year}"
PAIRING_BAD_COLUMNS = "{path}: expected columns {expected}, found {found}"
PAIRING_MALFORMED_ROW = "{path}, line {line}: {problem}"
PAIRING_EMPTY = "{path}: the pairing holds no rows"
CENSUS_NO_KEY = "census_correlations: shares have no column {key!r}; choose one of {known}"
DOWNLOAD_FB13_FAILED = (
    "could not download {url}: {reason}. Without a network, copy FB13 into {path}/fb13/ by hand "
    "(train.txt, valid.txt, test.txt as head<TAB>relation<TAB>tail slugs, entity_names.tsv)"
)
DOWNLOAD_BAD_OPENKE = (
    "{url}, line {line}: {problem} (not OpenKE's id format: a count line, then tab- or space-separated ids). "
    "Without a network, put FB13 as {path}/fb13/{{train,valid,test}}.txt (head<TAB>relation<TAB>tail) by hand"
)
DOWNLOAD_BAD_ARCHIVE = (
    "{url}: the download is not the expected FB15k-237 zip ({problem}). Copy the files into "
    "{path} by hand (layout: fb15k237/{{train,valid,test}}.txt)"
)
DOWNLOAD_CENSUS_FAILED = (
    "could not download {url}: {reason}. Without a network, copy the census file by hand to "
    "{path}/census/occupation_gender_ipums.csv (it is data/occupation_percentages_gender_occ1950.csv "
    "of github.com/nikhgarg/EmbeddingDynamicStereotypes)"
)
CENSUS_SEVERAL_YEARS = (
    "paired_shares needs the census of one year, got years {years}: load it with load_census(year=...)"
)
CENSUS_DUPLICATE_KEY = "census_correlations: {key} {value!r} names two KG occupations; use key='kg_occupation'"

# --- debiasing lab / validation ----------------------------------------------------------
LAB_K_TOO_LARGE = "k = {k} exceeds the {n} training triples of model {model!r}: choose a smaller k"
LAB_NO_KS = "no k given: pass at least one positive number of triples to remove"
CENSUS_FILE_MISSING = (
    "no census file at {path}: run 'python -m kgbias_core download --data-dir {data_dir}' or copy "
    "occupation_gender_ipums.csv there by hand"
)
CENSUS_NOT_PAIRED = (
    "no occupation of model {model!r} (graph {dataset!r}) is in a census pairing: kgbias ships pairings for "
    "FB15k-237 and FB13 only"
)
LAB_BAD_INDEX_FILE = "{path}, line {line}: expected training-triple indices (integers), found {found!r}"
# embedding-level debiasing (kgbias_core.whatif.projection, kgbias_core.whatif.regularised, compare)
DEBIASED_NO_RETRAIN = (
    "model {model!r} was debiased at the embedding level ({method}): influence, what-ifs, noise bands and "
    "calibration linearise or retrain TransE's plain objective (METHODS §2), which this model does not minimise; "
    "run them on its base model"
)
UNKNOWN_DEBIAS_METHOD = "unknown debiasing method {method!r}: choose one of {known}"
DEBIAS_BAD_WEIGHT = "the fairness weight must be a positive finite number, got {weight!r}"
DEBIAS_NO_DIRECTION = (
    "model {model!r} has no gender direction: {reason}"
)
REGULARISER_MISSING = (
    "fairness_weight = {weight} in the training config, but no fairness term was given: train it with "
    "'kgbias debias-embedding --method regularise' (kgbias_core.whatif.regularised)"
)
COMPARE_NO_MODELS = "compare-debiasing needs at least one model"
COMPARE_OTHER_GRAPH = (
    "model {model!r} was trained on graph {found!r} (data hash {found_hash}), the first model on {expected!r} "
    "({expected_hash}): compare models of one graph"
)

# --- command line ------------------------------------------------------------------------------
BAD_NUMBER = "expected {expected}, got {value!r}"
CSV_OUT_IS_DIRECTORY = "{path} is a directory: --out names the file to write (nothing was written)"
OUT_NOT_A_FILE = (
    "{path} is {kind}, not a regular file: --out names the file to write, refusing to replace it (nothing "
    "was written)"
)
CSV_WRITE_FAILED = "{path}: could not write the file ({reason}); a previous file of that name is unchanged"
PATH_REFUSED = "{path}: the file system refused it ({reason}); nothing was written"
STORE_NOT_WRITABLE = (
    "{path} is not writable ({reason}): {what} needs to write there; refused before any work (nothing was written)"
)
UNEXPECTED_ERROR = "{exc_type}: {message} (unexpected: rerun with KGBIAS_DEBUG=1 for the traceback)"
INTERRUPTED = "interrupted: nothing was saved by the unfinished command"

# --- reports and static images -------------------------------------------------------------------


class ExportError(KGBiasError):
    """A chart could not be saved as a static image (PNG, SVG)."""


REPORT_NOT_A_RUN = (
    "{path} is no what-if run: its config.json records no edit (give a run made by 'debias' or the lab)"
)
REPORT_RUN_NOT_OF_MODEL = (
    "{run} is not a what-if of the model {model} as it is stored now (another base, or the base was retrained "
    "since): give the run's own base as --model"
)
STATIC_EXPORT_FAILED = (
    "could not save the chart as {format}: {reason}. Static export drives a Chromium (kgbias never downloads one): "
    "install it (scripts/setup.sh dev, or apt-get install chromium) or set BROWSER_PATH to a Chrome or Chromium"
)

# --- importing embeddings trained elsewhere (kgbias_core.embeddings.importers) ---------------------
RETRAIN_TOO_LARGE = (
    "{what} refused before starting: {retrains} retrain(s) of {n_triples:,} triples and {n_entities:,} entities x "
    "{epochs} epochs at dim {dim} would take about {hours:,.1f} h on this CPU; the limit is {limit_hours:.1f} h "
    "(set {env} to change it), so nothing was started"
)
IMPORT_DIMS_DIFFER = (
    "{format} import: the entity vectors {entities} and the relation vectors {relations} differ in dimension; "
    "a translation h + r - t needs one dimension d for both (nothing was written)"
)
IMPORT_NEEDS_PATH = "import --format {format} needs --path: the folder (or file) holding the embeddings"
IMPORT_FILE_MISSING = "{format} import: {path} is missing ({expected})"
IMPORT_BAD_FILE = "{format} import: cannot read {path}: {problem}"
IMPORT_NO_DISTANCE = (
    "{format} import from {path}: the files do not record TransE's distance; pass --distance l1, l2 or squared_l2"
)
IMPORT_NOT_TRANSE = (
    "{format} import from {path}: the model is {found}, not TransE-like; only translation embeddings with an L1, "
    "L2 or squared L2 distance can be imported yet"
)
IMPORT_PBG_UNSUPPORTED = (
    "pbg import from {path}: kgbias cannot score {problem} exactly as PyTorch-BigGraph does; it imports one "
    "entity type, one operator for every relation and no bias term"
)
IMPORT_MISSING_LABEL = (
    "{kind} {label!r} of graph {graph!r} is not in the imported {kind} map {path}: {found} of the graph's "
    "{needed} {kinds} found, the map holds {imported}"
)
IMPORT_PICKLE_REFUSED = (
    "{path} is a pickle, and unpickling runs whatever code it holds: pass --trust-pickle only for a file from a "
    "source you trust, or save the model's state_dict() beside it as trained_model.pt"
)
IMPORT_PICKLE_TRUSTED = "warning: unpickling {path} (--trust-pickle): this runs any code the file holds"

# --- findings (kgbias_core.findings) ---------------------------------------------------------------
ADD_OTHER_C = (
    "the store's Add what-ifs use another c than the paper's 0.5 ({runs}): claim 5 is Du's Add with c = 0.5, and "
    "an extreme c adds so many dummies that B_gr measures them, not a debiasing; run findings --retrain OCC"
)


# --- devices ----------------------------------------------------------------------
class DeviceError(KGBiasError):
    """The device asked for (--device, KGBIAS_DEVICE) is unknown or absent on this machine."""


UNKNOWN_DEVICE = "unknown device {spec!r} (from {source}): choose auto, cpu, cuda or cuda:N"
NO_CUDA_DEVICE = (
    "device {spec!r} (from {source}) asks for a GPU, but PyTorch sees no CUDA device on this machine: "
    "pass --device cpu or auto"
)
CUDA_INDEX_OUT_OF_RANGE = (
    "device {spec!r} (from {source}): this machine has {count} CUDA device(s), numbered 0 to {last}"
)
NEWTON_NEEDS_SQUARED_L2 = (
    "model {model}: the Newton-step what-if differentiates the squared-L2 TransE objective, and this model"
    " scores with {distance}"
)
PLAN_NEEDS_DISTANCE = (
    "plan: removals are planned on squared-L2 and pseudo-Huber models (their |H| is exact), and model {model}"
    " scores with {distance}"
)


# --- seed families (issue 24) ---
FAMILY_TOO_SMALL = "a seed family needs at least 2 distinct seeds, got {n}: pass --seeds 2 or more"
FAMILY_NO_CALIBRATE = "--calibrate with --seeds: calibrate one member at a time (kgbias calibrate --model NAME)"
FAMILY_MEMBER_DIFFERS = (
    "{path} holds a model that is not seed {seed} of family {family} (another config, seed or data): pass "
    "--force to replace it, or another --out"
)
# --- the planner (kgbias_core.whatif.plan, kgbias plan) --------------------------------------------------
PLAN_NO_TARGETS = "plan: name at least one target occupation"
PLAN_NO_FAMILY = ("plan --band seed: {model} belongs to no seed family (train one with kgbias train --seeds 3, or "
                  "plan with --band noise)")
PLAN_UNDEFINED_TARGET = (
    "plan: occupation {occupation!r} has {n_male} male and {n_female} female persons, so its B_gr is undefined "
    "and no edit can be planned for it"
)
PLAN_BAD_INTERVAL = "plan: the target interval of {occupation!r} is [{low}, {high}]: it needs finite low <= high"
PLAN_TARGET_NOT_PLANNED = (
    "plan: a target interval is given for {occupations}, which is not among the occupations planned"
)
PLAN_TARGET_FORMAT = "--target {text!r}: expected OCCUPATION=LOW:HIGH, e.g. actor=-0.01:0.01"
PLAN_TARGET_MISSED = (
    "{name}: predicted B_gr {after:+.4f} stays outside the target [{low:+.4f}, {high:+.4f}] (closest plan: {k} of "
    "the {n} candidate triples that move it towards the target within the other bounds)"
)
PLAN_OUT_OF_REACH = (
    "{name}: out of reach of any removal that keeps the groups: removing every triple that moves it its way would "
    "change B_gr by about {reach:+.4f}, to {to:+.4f} (the Newton step's first order, at the plan's scale); an Add "
    "may reach it (plan --add; the lab's Edit: Add)"
)
PLAN_CAPPED = ("{name}: the plan stopped at its cap of {cap} triples (plan --max-triples; the lab's \"At most this "
               "many triples\"): a larger cap may reach the target")
PLAN_COLLATERAL = "{n} of {m} other occupations are predicted to change beyond their band: {names}"
PLAN_LINK_BOUND = "the link-prediction proxy {share:.4f} is above the bound {bound:g}"
PLAN_EMPTY = ("plan: the plan edits nothing (every target is already inside its interval, or no edit of its kind "
              "moves it there): nothing to verify")
PLAN_ADD_ONE_TARGET = "plan --add: an Add plans one occupation at a time (its dummies join one), got {n}"
PLAN_ADD_EQUAL = (
    "{name}: {n_male} men and {n_female} women: Du's Add adds c·| |M| − |F| | dummies of the rarer gender, so there "
    "is none to add"
)
PLAN_ADD_AWAY = (
    "{name}: an Add moves B_gr away from the target: the largest Add, {count} dummies (c = {c_max:g}), predicts B_gr "
    "{after:+.4f} (now {before:+.4f}), the wrong way for [{low:+.4f}, {high:+.4f}], so no dummy is planned; a removal "
    "plan may reach it"
)
PLAN_ADD_SHORT = (
    "{name}: predicted B_gr {after:+.4f} stays outside the target [{low:+.4f}, {high:+.4f}] (closest plan: "
    "{count} dummies, of at most {largest} = c_max {c_max:g} × | |M| − |F| |)"
)
PREDICTION_AUDIT_NO_OCCUPATION = (
    "model {model}: no occupation has persons of both genders, so there is no B_gr whose prediction could be audited"
)
PREDICTION_AUDIT_KEPT = "The model {name} stays in use; its predictions are shown without an audit."
STAND_IN_AUDIT_KEPT = "The model {name} stays in use; its predictions are shown without a stand-in audit."
STAND_IN_NO_BAND = ("model {model} scores with {distance}: a stand-in audit is fitted for {fitted} imports only (its "
                    "ratio would have no band to be shown with), so nothing was trained")
STAND_IN_NOT_IMPORT = ("model {model} is not an imported TransE: a stand-in audit is for imports (a model trained here "
                       "has an audit of its own retrain)")
ADD_AUDIT_NO_OCCUPATION = (
    "model {model}: no occupation has persons of both genders and a gender gap that Add (c = {c}) fills with at "
    "least one dummy, so there is no addition to audit"
)
ADD_AUDIT_KEPT = "The model {name} stays in use; its Add predictions are shown without an audit."
FAMILY_KEPT = (
    "The model {name} stays in use, and every member of its family trained before the cancel stays in the store; "
    "the missing members can be trained again."
)
