"""The load side of a bench run: the model directory and tokenizer (``modeldir``), the prompts
made from it, the HTTP client and the attacker/victim load generator, and the tokenization
probe."""
