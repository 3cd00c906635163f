-- pgvector: embeddings of past incidents and messages live next to the rows they describe.
CREATE EXTENSION IF NOT EXISTS vector;
