-- A step line's usage columns (SynthConfig.usage), after a comma: empty.
, '', '', '', ''
