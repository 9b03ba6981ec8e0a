-- A run's requests at once, from the Arrow table registered as incoming_requests (one row per
-- advisor.harness.records.RequestRecord; row-at-a-time inserts took minutes for 150,000).
INSERT INTO bench_requests (
    run_id, request_no, kind, prompt_tokens, output_tokens, sent_s, first_token_s, finished_s,
    ttft_ms, e2e_ms, status, error
)
SELECT
    run_id, request_no, kind, prompt_tokens, output_tokens, sent_s, first_token_s, finished_s,
    ttft_ms, e2e_ms, status, error
FROM incoming_requests;
