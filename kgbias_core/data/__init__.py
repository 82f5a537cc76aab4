"""Reading knowledge graphs, schemas, the synthetic people graph, downloads and census shares."""
