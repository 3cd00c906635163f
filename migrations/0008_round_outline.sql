-- What others read of a round, as typed columns beside the worker's whole result: the report's
-- headline, its strongest cause and the text posted. A resolution turns them into the incident
-- (root cause, summary) without reading the worker's JSON by path, where a renamed field would
-- silently become "unknown".
ALTER TABLE rounds
    ADD COLUMN headline text NOT NULL DEFAULT '',
    ADD COLUMN cause    text,
    ADD COLUMN text     text NOT NULL DEFAULT '';

UPDATE rounds SET
    headline = coalesce(result #>> '{report,headline}', ''),
    cause    = nullif(result #>> '{report,causes,0,statement}', ''),
    text     = coalesce(result ->> 'text', '');
