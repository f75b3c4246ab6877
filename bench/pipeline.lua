-- SPDX-License-Identifier: MIT
--
-- wrk script for HTTP/1.1 pipelining: every write sends DEPTH copies of the
-- GET request for the URL's path in one buffer, and the next write on that
-- connection happens once all DEPTH responses are in.
--
--   wrk -c100 -d10s --latency -s bench/pipeline.lua \
--       http://127.0.0.1:8080/hello/John -- DEPTH [CONNECTIONS]
--
-- Counting: at start-up wrk calls request() once and parses the buffer to
-- learn how many requests one write carries (DEPTH).  Every parsed response
-- counts as one request in "Requests/sec", so the rate is responses per
-- second, as in a run without pipelining.  Latency is recorded once per
-- write: from sending the DEPTH requests to receiving the last response.
--
-- Latency percentiles: before printing, wrk 4.1 "corrects" its latency
-- histogram for coordinated omission with an expected interval of
--   runtime / (responses / connections),
-- which assumes one response per write.  With pipelining that interval is
-- DEPTH times too short, so the correction adds many times more made-up
-- samples than were measured, and its Latency Distribution is meaningless
-- (wrk often prints 0.00us for the 99th percentile).  When CONNECTIONS is
-- given, done() undoes that correction exactly and prints the percentiles of
-- the measured samples:
--   Raw write latency: samples N p50 X.XXus p90 X.XXus p99 X.XXus
-- (bench/run.sh reads that line).

-- Globals, not locals: done() reads them from the thread states.
depth = 16
connections = nil
local batch

function init(args)
   depth = tonumber(args[1] or depth)
   if depth == nil or depth < 1 or depth ~= math.floor(depth) then
      error("pipeline.lua: DEPTH must be a positive integer")
   end
   connections = tonumber(args[2])

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

-- setup() and done() run in wrk's main Lua state, init() and request() in
-- each thread's own state: setup keeps the threads so that done can read
-- the arguments init saw.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

-- Percentile p of a histogram given as ascending values and their counts,
-- with wrk's rank rule.
local function percentile(values, counts, total, p)
   local rank = math.floor(p / 100 * total + 0.5 + 0.5)
   local seen = 0
   for i = 1, #values do
      seen = seen + counts[i]
      if seen >= rank then
         return values[i]
      end
   end
   return values[#values] or 0
end

function done(summary, latency, requests)
   local conns = threads[1] and threads[1]:get("connections")
   if conns == nil or conns < 1 then
      return
   end

   -- The interval wrk used (integer arithmetic, as in wrk.c).  It corrected
   -- nothing when no connection completed a response.
   local per_conn = math.floor(summary.requests / conns)
   local expected = per_conn > 0 and math.floor(summary.duration / per_conn) or 0

   -- The histogram as wrk left it: values in microseconds, ascending.
   -- latency(i) is the i-th non-empty bucket (from the measured minimum up).
   local values, counts = {}, {}
   for i = 1, #latency do
      values[i], counts[i] = latency(i)
   end

   -- wrk's correction added each measured count at value n to the buckets
   -- n - e, n - 2e, ... while they stay above e (for n >= 2e).  So, walking
   -- down, a bucket m > e holds its own measured count plus the measured
   -- counts of m + e, m + 2e, ...: subtract that running sum, kept per
   -- residue m mod e.  (Made-up samples below the measured minimum are not
   -- visible through latency(i) and need no undoing.)
   local measured, above, total = {}, {}, 0
   for i = #values, 1, -1 do
      local m, c = values[i], counts[i]
      if expected > 0 and m > expected then
         local r = m % expected
         c = c - (above[r] or 0)
         above[r] = (above[r] or 0) + c
      end
      measured[i] = c
      total = total + c
   end
   if total <= 0 then
      return
   end

   io.write(string.format(
      "Raw write latency: samples %d p50 %.2fus p90 %.2fus p99 %.2fus\n",
      total,
      percentile(values, measured, total, 50),
      percentile(values, measured, total, 90),
      percentile(values, measured, total, 99)))
end
