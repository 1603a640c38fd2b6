"""Training and building the shipped artifacts: the GPTs, the distilled table, Medusa and EAGLE heads,
the model card and the transformers export."""
