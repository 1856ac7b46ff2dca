-- GET of the path wrk is given (bench/metrics.ts: /healthz), with no argument.
dofile("common.lua")
