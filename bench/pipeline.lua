-- SPDX-License-Identifier: MIT
--
-- wrk script for HTTP/1.1 pipelining: every write sends DEPTH copies of the
-- GET request for the URL's path in one buffer, and the next write happens
-- once all DEPTH responses are in.
--
--   wrk -c100 -d10s --latency -s bench/pipeline.lua http://127.0.0.1:8080/hello/John -- 16
--
-- How wrk counts: at start-up it calls request() once and parses the returned
-- buffer to learn how many requests one write carries (DEPTH here).  Every
-- parsed response counts as one request in "Requests/sec", so the rate is
-- responses per second, as for a non-pipelined run.  Latency is recorded once
-- per write: the time from sending the DEPTH requests to receiving the last of
-- their responses.

local depth = 16
local batch

function init(args)
   depth = tonumber(args[1] or depth)
   if depth == nil or depth < 1 or depth ~= math.floor(depth) then
      error("pipeline.lua: the depth argument must be a positive integer")
   end

   -- wrk.format(nil, nil) builds "GET <path of the URL> HTTP/1.1" with the
   -- Host field (and any -H fields) that a plain wrk run would send.
   local one = wrk.format(nil, nil)
   local copies = {}
   for i = 1, depth do
      copies[i] = one
   end
   batch = table.concat(copies)
end

function request()
   return batch
end
