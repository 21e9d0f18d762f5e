-- A small logs.db of the llm CLI (https://llm.datasette.io/en/stable/logging.html), legacy
-- schema: tables conversations and responses as llm's migrations leave them.
CREATE TABLE [conversations] ([id] TEXT PRIMARY KEY, [name] TEXT, [model] TEXT);
CREATE TABLE "responses" (
   [id] TEXT PRIMARY KEY,
   [model] TEXT,
   [prompt] TEXT,
   [system] TEXT,
   [prompt_json] TEXT,
   [options_json] TEXT,
   [response] TEXT,
   [response_json] TEXT,
   [conversation_id] TEXT REFERENCES [conversations]([id]),
   [duration_ms] INTEGER,
   [datetime_utc] TEXT,
   [input_tokens] INTEGER,
   [output_tokens] INTEGER,
   [token_details] TEXT
);
INSERT INTO conversations VALUES ('01hqz0conv0000000000000001', 'Sourdough starter', 'gpt-4o-mini');
INSERT INTO conversations VALUES ('01hqz0conv0000000000000002', 'Rust lifetimes', 'claude-3-5-sonnet');
INSERT INTO responses VALUES ('01hqz0resp0000000000000001', 'gpt-4o-mini', 'How often should I feed a sourdough starter?', NULL, NULL, '{}', 'Once a day at room temperature, weekly in the fridge.', NULL, '01hqz0conv0000000000000001', 1830, '2024-02-10T08:00:00.123456', 12, 14, NULL);
INSERT INTO responses VALUES ('01hqz0resp0000000000000002', 'gpt-4o-mini', 'It smells like acetone, is that bad?', NULL, NULL, '{}', 'It is hungry: feed it twice a day for a few days.', NULL, '01hqz0conv0000000000000001', 1620, '2024-02-10T08:05:10.000000', 30, 15, NULL);
INSERT INTO responses VALUES ('01hqz0resp0000000000000003', 'claude-3-5-sonnet', 'Explain the elided lifetime in fn first(s: &str) -> &str', 'Be brief.', NULL, '{}', 'The output borrows from the only input, so both get the same lifetime.', NULL, '01hqz0conv0000000000000002', 2400, '2024-02-11T21:00:00.000000', 20, 18, NULL);
INSERT INTO responses VALUES ('01hqz0resp0000000000000004', 'gpt-4o-mini', 'A one-off question: what is 17 * 23?', NULL, NULL, '{}', '', NULL, NULL, 300, '2024-02-12T10:00:00.000000', 9, 0, NULL);
INSERT INTO responses VALUES ('01hqz0resp0000000000000005', 'gpt-4o-mini', 'Back to the starter: can I use rye flour?', NULL, NULL, '{}', 'Yes, rye makes it more active.', NULL, '01hqz0conv0000000000000001', 900, '2024-02-13T07:30:00.000000', 10, 8, NULL);
