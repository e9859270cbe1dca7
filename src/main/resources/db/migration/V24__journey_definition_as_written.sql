-- A journey version's definition keeps its nodes in the order the client wrote them (reads return
-- them in that order, as journeys/JourneyDefinition promises): json keeps the text as written, jsonb
-- reorders keys. The definition is stored once per version and only ever read whole, so nothing
-- needs jsonb's indexing or operators.
alter table journey_versions alter column definition type json using definition::json;
