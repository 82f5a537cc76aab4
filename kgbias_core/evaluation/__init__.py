"""Link prediction: tail scores, filtered ranks, MRR and Hits@k."""
