-- A logs.db written by llm 0.36 (the echo model of the llm-echo plugin): `llm -m echo`,
-- `llm -c`, a system prompt (-s) and a fragment (-f), so the prompt of the last turn is a
-- text_ref. Only the tables rheo reads, with llm's own CREATE statements (message store of
-- migration m023 and the legacy tables). Two legacy rows are added by hand, as an upgraded
-- logs.db holds them: one from before the upgrade, and one whose id is also a turn (llm's
-- dual-write era; llm itself shows the turn and hides the row).
CREATE TABLE "conversations" (
   "id" TEXT PRIMARY KEY,
   "name" TEXT,
   "model" TEXT
);
CREATE TABLE "responses" (
   "id" TEXT PRIMARY KEY,
   "model" TEXT,
   "prompt" TEXT,
   "system" TEXT,
   "prompt_json" TEXT,
   "options_json" TEXT,
   "response" TEXT,
   "response_json" TEXT,
   "conversation_id" TEXT REFERENCES "conversations"("id"),
   "duration_ms" INTEGER,
   "datetime_utc" TEXT,
   "input_tokens" INTEGER,
   "output_tokens" INTEGER,
   "token_details" TEXT,
   "schema_id" TEXT REFERENCES "schemas"("id")
, "resolved_model" TEXT, "reasoning" TEXT);
CREATE TABLE "fragments" (
   "id" INTEGER PRIMARY KEY,
   "hash" TEXT,
   "content" TEXT,
   "datetime_utc" TEXT,
   "source" TEXT
);
CREATE TABLE "messages" (
   "hash" TEXT PRIMARY KEY,
   "parent_hash" TEXT REFERENCES "messages"("hash"),
   "role" TEXT,
   "provider_metadata" TEXT
);
CREATE TABLE "parts" (
   "id" INTEGER PRIMARY KEY,
   "message_hash" TEXT REFERENCES "messages"("hash"),
   "position" INTEGER,
   "type" TEXT,
   "tool_name" TEXT,
   "text" TEXT,
   "payload" TEXT
);
CREATE TABLE "threads" (
   "id" TEXT PRIMARY KEY,
   "name" TEXT,
   "tip_message_hash" TEXT REFERENCES "messages"("hash"),
   "forked_from" TEXT REFERENCES "threads"("id"),
   "datetime_utc" TEXT
);
CREATE TABLE "turns" (
   "id" TEXT PRIMARY KEY,
   "thread_id" TEXT REFERENCES "threads"("id"),
   "parent_message_hash" TEXT REFERENCES "messages"("hash"),
   "tip_message_hash" TEXT REFERENCES "messages"("hash"),
   "model" TEXT,
   "resolved_model" TEXT,
   "options_json" TEXT,
   "schema_id" TEXT REFERENCES "schemas"("id"),
   "input_tokens" INTEGER,
   "output_tokens" INTEGER,
   "token_details" TEXT,
   "duration_ms" INTEGER,
   "datetime_utc" TEXT
, "response_json" TEXT);
INSERT INTO fragments VALUES (1, '40b7d9332263b4464dee75415c712d6955e145ca9871359652d0e5c6ed900a66', 'Porto is a city in the north of Portugal, on the Douro river.
', '2026-12-01 11:30:16', '/tmp/porto.txt');
INSERT INTO messages VALUES ('b2:9a8110ab50c3e2ffcfe230822f4c5ca0', NULL, 'user', NULL);
INSERT INTO messages VALUES ('b2:f057e5e8f97d1b9220389c13f6084df3', 'b2:9a8110ab50c3e2ffcfe230822f4c5ca0', 'assistant', NULL);
INSERT INTO messages VALUES ('b2:51c424bf523c80df761e76f1e336076d', 'b2:f057e5e8f97d1b9220389c13f6084df3', 'user', NULL);
INSERT INTO messages VALUES ('b2:f2881c3d313ca16a034b7372ba864945', 'b2:51c424bf523c80df761e76f1e336076d', 'assistant', NULL);
INSERT INTO messages VALUES ('b2:074dea0bd0259e0d5dca16426a45e4f5', NULL, 'system', NULL);
INSERT INTO messages VALUES ('b2:6ab24c738da6295ab12a0b43f70d7d88', 'b2:074dea0bd0259e0d5dca16426a45e4f5', 'user', NULL);
INSERT INTO messages VALUES ('b2:da3c98bfe9a87403006d06c04dc61aa1', 'b2:6ab24c738da6295ab12a0b43f70d7d88', 'assistant', NULL);
INSERT INTO messages VALUES ('b2:dc7651f2aa60c95960fe18e23eea2db1', NULL, 'user', NULL);
INSERT INTO messages VALUES ('b2:ea237e14bacb7fde82811a49e055b2e9', 'b2:dc7651f2aa60c95960fe18e23eea2db1', 'assistant', NULL);
INSERT INTO parts VALUES (1, 'b2:9a8110ab50c3e2ffcfe230822f4c5ca0', 0, 'text', NULL, 'I live in Porto and bake sourdough.', NULL);
INSERT INTO parts VALUES (2, 'b2:f057e5e8f97d1b9220389c13f6084df3', 0, 'text', NULL, '{
  "prompt": "I live in Porto and bake sourdough.",
  "system": "",
  "attachments": [],
  "stream": true,
  "previous": []
}', NULL);
INSERT INTO parts VALUES (3, 'b2:51c424bf523c80df761e76f1e336076d', 0, 'text', NULL, 'My starter is called Bubbles.', NULL);
INSERT INTO parts VALUES (4, 'b2:f2881c3d313ca16a034b7372ba864945', 0, 'text', NULL, '{
  "prompt": "My starter is called Bubbles.",
  "system": "",
  "attachments": [],
  "stream": true,
  "previous": []
}', NULL);
INSERT INTO parts VALUES (5, 'b2:074dea0bd0259e0d5dca16426a45e4f5', 0, 'text', NULL, 'Be brief.', NULL);
INSERT INTO parts VALUES (6, 'b2:6ab24c738da6295ab12a0b43f70d7d88', 0, 'text', NULL, 'What is 17 * 23?', NULL);
INSERT INTO parts VALUES (7, 'b2:da3c98bfe9a87403006d06c04dc61aa1', 0, 'text', NULL, '{
  "prompt": "What is 17 * 23?",
  "system": "Be brief.",
  "attachments": [],
  "stream": true,
  "previous": []
}', NULL);
INSERT INTO parts VALUES (8, 'b2:dc7651f2aa60c95960fe18e23eea2db1', 0, 'text', NULL, NULL, '{"text_ref": [{"fragment": 1}, {"literal": "\nSummarise this for me."}]}');
INSERT INTO parts VALUES (9, 'b2:ea237e14bacb7fde82811a49e055b2e9', 0, 'text', NULL, '{
  "prompt": "Porto is a city in the north of Portugal, on the Douro river.\n\nSummarise this for me.",
  "system": "",
  "attachments": [],
  "stream": true,
  "previous": []
}', NULL);
INSERT INTO threads VALUES ('01m8rnx4mfe0nxr526t5ekx552', 'I live in Porto and bake sourdo…', 'b2:f2881c3d313ca16a034b7372ba864945', NULL, '2026-12-01 11:30:11.220107+00:00');
INSERT INTO threads VALUES ('01m8rnx85cbea4rjd1j319njb5', 'What is 17 * 23?', 'b2:da3c98bfe9a87403006d06c04dc61aa1', NULL, '2026-12-01 11:30:14.831235+00:00');
INSERT INTO threads VALUES ('01m8rnx9q7c6jxr4hfnf865jtn', 'Porto is a city in the north of…', 'b2:ea237e14bacb7fde82811a49e055b2e9', NULL, '2026-12-01 11:30:16.426222+00:00');
INSERT INTO turns VALUES ('01m8rnx4mh8cxrpax3jeykafa3', '01m8rnx4mfe0nxr526t5ekx552', 'b2:9a8110ab50c3e2ffcfe230822f4c5ca0', 'b2:f057e5e8f97d1b9220389c13f6084df3', 'echo', NULL, NULL, NULL, 7, 18, NULL, 0, '2026-12-01T11:30:11.217459+00:00', NULL);
INSERT INTO turns VALUES ('01m8rnx6esqp1br1vm48m8xz83', '01m8rnx4mfe0nxr526t5ekx552', 'b2:51c424bf523c80df761e76f1e336076d', 'b2:f2881c3d313ca16a034b7372ba864945', 'echo', NULL, NULL, NULL, 5, 16, NULL, 0, '2026-12-01T11:30:13.081443+00:00', NULL);
INSERT INTO turns VALUES ('01m8rnx85epe795jjjnxhz5ce1', '01m8rnx85cbea4rjd1j319njb5', 'b2:6ab24c738da6295ab12a0b43f70d7d88', 'b2:da3c98bfe9a87403006d06c04dc61aa1', 'echo', NULL, NULL, NULL, 7, 17, NULL, 0, '2026-12-01T11:30:14.830383+00:00', NULL);
INSERT INTO turns VALUES ('01m8rnx9q9kn67sw91hsv1sgb6', '01m8rnx9q7c6jxr4hfnf865jtn', 'b2:dc7651f2aa60c95960fe18e23eea2db1', 'b2:ea237e14bacb7fde82811a49e055b2e9', 'echo', NULL, NULL, NULL, 17, 27, NULL, 0, '2026-12-01T11:30:16.425667+00:00', NULL);
INSERT INTO conversations VALUES ('01hqz0conv0000000000000001', 'Sourdough starter', 'gpt-4o-mini');
INSERT INTO responses (id, model, prompt, system, options_json, response, conversation_id, duration_ms, datetime_utc) VALUES ('01hqz0resp0000000000000001', 'gpt-4o-mini', 'How often should I feed a sourdough starter?', NULL, '{}', 'Once a day at room temperature.', '01hqz0conv0000000000000001', 1830, '2024-02-10T08:00:00.123456');
INSERT INTO responses (id, model, prompt, system, options_json, response, conversation_id, duration_ms, datetime_utc) VALUES ('01m8rnx85epe795jjjnxhz5ce1', 'echo', 'What is 17 * 23?', 'Be brief.', '{}', 'the same exchange, logged twice', NULL, 0, '2026-12-01T11:30:14.830383');
