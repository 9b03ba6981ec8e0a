-- One request of a run (advisor.harness.records.RequestRecord).
INSERT INTO bench_requests (
    run_id, request_no, kind, prompt_tokens, output_tokens, sent_s, first_token_s, finished_s,
    ttft_ms, e2e_ms, status, error
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
