-- ratios/gpu_radix: one more than the largest GPU count in a people cube ({{cube}}), the radix
-- of the GPU-count digit in a group number.
SELECT coalesce(max(gpus), 0) + 1 FROM {{cube}}
