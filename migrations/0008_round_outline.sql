-- What others read of a round, as typed columns beside the worker's whole result: the report's
-- headline, its strongest cause, the text posted and the questions asked. A resolution turns them
-- into the incident and the next round into its context, without reading the worker's JSON by
-- path (where a renamed field would silently become "unknown") and whatever that JSON's shape
-- becomes.
ALTER TABLE rounds
    ADD COLUMN headline  text   NOT NULL DEFAULT '',
    ADD COLUMN cause     text,
    ADD COLUMN text      text   NOT NULL DEFAULT '',
    ADD COLUMN questions text[] NOT NULL DEFAULT '{}';

UPDATE rounds SET
    headline  = coalesce(result #>> '{report,headline}', ''),
    cause     = nullif(result #>> '{report,causes,0,statement}', ''),
    text      = coalesce(result ->> 'text', ''),
    questions = coalesce(
        ARRAY(SELECT jsonb_array_elements_text(
                  CASE WHEN jsonb_typeof(result -> 'questions') = 'array'
                       THEN result -> 'questions' ELSE '[]'::jsonb END)),
        '{}');
