"""The hybrid stack under the hybrid engine: pgvector stores, embedders and their cache, Haystack components, ingestion, rerankers. Heavy dependencies are imported only when used."""
