-- A saved answer is delivered, always: an answer (or a refusal) is marked
-- delivered only once Claude has it, either as the result of the tool call
-- that asked (delivered_how 'tool_result') or, when the process that asked
-- had ended, as a new user turn that quotes the ask ('new_turn'). An answered
-- input with delivered_at NULL is still owed to Claude.
ALTER TABLE inputs
    ADD COLUMN delivered_at  timestamptz,
    ADD COLUMN delivered_how text CHECK (delivered_how IN ('tool_result', 'new_turn'));

-- Answers given before delivery was tracked were delivered as far as
-- anyone can tell now: never send them again.
UPDATE inputs SET delivered_at = coalesce(answered_at, now()), delivered_how = 'tool_result'
WHERE status IN ('answered', 'denied');

-- Each start of a session reads its undelivered answers; the start of a
-- server reads the sessions that have any.
CREATE INDEX inputs_undelivered_idx ON inputs (session_id, answered_at)
    WHERE status IN ('answered', 'denied') AND delivered_at IS NULL;
