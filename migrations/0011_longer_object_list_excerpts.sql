-- A list of Kubernetes objects (a workload's pods) keeps each item's identity in its excerpt so
-- failing pods can be compared with their healthy siblings; such an excerpt may take twice the
-- usual 3,500 characters.
ALTER TABLE evidence DROP CONSTRAINT evidence_excerpt_check;
ALTER TABLE evidence ADD CONSTRAINT evidence_excerpt_check CHECK (char_length(excerpt) <= 7000);
