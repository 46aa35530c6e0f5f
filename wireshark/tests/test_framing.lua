-- tests/test_framing.lua: the dissector's framing state machine (cqlframe/framing.lua) against
-- every case of vectors/manifest.json, fed whole and in each of the manifest's chunkings.
--
--   lua5.2 wireshark/tests/test_framing.lua [repo-root]     (and the same with lua5.4)
--
-- The driver below does what the dissector does with TCP segments: it keeps the bytes of an
-- incomplete unit and asks the state machine again when more arrive (RECV-4, partial reads).
-- A case passes when the envelopes delivered before the first framing error (version, flags,
-- stream, opcode, body) and that error's rule and stream offset equal the manifest's (for what
-- a server receives, the expected result or one of its server_receives_alternatives).
-- End of input inside a frame or a sequence is RECV-9. Sessions are fed in causal order (the
-- client up to server_responds_after, the server, the rest of the client: LIFE-6) and
-- compared on both sides, including the switch offsets (LIFE-4, LIFE-5, LIFE-8). Every
-- finding's rule ID must lie within the 239 bytes Wireshark shows of an expert info's text.

local root = arg[1] or "."
package.path = root .. "/wireshark/?.lua;" .. root .. "/wireshark/tests/lib/?.lua;" .. package.path

local framing = require("cqlframe.framing")
local json = require("json")
local t = require("harness")
local check, read, same = t.check, t.read, t.same

-- A receiver for one direction: feed(bytes) any number of times, then finish().
local function receiver(conv, key, opts)
    local r = { buf = "", envelopes = {}, error = nil, records = {} }
    local dir = framing.direction(conv, key, key)
    dir.at_start = true
    r.dir = dir
    -- A receiver delivers nothing from a unit that failed a check, and nothing after it
    -- (RECV-11). Findings that are not framing errors (sender rules such as FMT-6 or SEND-8,
    -- NEG-4, LIFE-7 beside RECV-1) do not stop it.
    local function deliver(rec)
        if r.error then return end
        for _, f in ipairs(rec.findings) do
            if f.fatal and r.error == nil then
                r.error = { rule = f.rule, offset = rec.offset }
            end
        end
        if r.error then return end
        for _, env in ipairs(rec.envelopes) do
            local data = env.reassembled and env.reassembled.data or rec.content or r.buf
            local start = env.reassembled and 1 or env.start
            if rec.kind == "envelope" then data, start = r.cur, env.start end
            r.envelopes[#r.envelopes + 1] = {
                version = env.version, flags = env.flags, stream = env.stream, opcode = env.opcode,
                body = data:sub(start + env.header_len, start + env.header_len - 1 + env.length), framed = rec.kind == "frame",
            }
        end
    end
    -- pending bytes are kept as pieces and joined only once enough have arrived for the next
    -- unit (feeding 431 kB one byte at a time must not copy the buffer at every byte)
    -- each fed chunk is one packet: its number is what the dissector's pinfo.number would be
    local pieces, have, want, packet = {}, 0, 1, 0
    function r.feed(bytes)
        packet = packet + 1
        pieces[#pieces + 1] = bytes
        have = have + #bytes
        if have < want then return end
        r.buf = table.concat(pieces)
        pieces = {}
        while r.error == nil and #r.buf > 0 do
            local n, kind, more = framing.pdu(conv, dir, r.buf, 1, #r.buf, opts)
            if n == nil then want = #r.buf + (more or 1); break end
            r.cur = r.buf
            local rec = framing.process(conv, dir, r.buf, 1, n, kind, { number = packet }, opts)
            r.records[#r.records + 1] = rec
            for _, f in ipairs(rec.findings) do
                -- Wireshark shows 239 bytes of an expert info's text (ITEM_LABEL_LENGTH 240):
                -- the rule ID must come within them (a "[past the framing error ...]" tail may not)
                local shown = framing.describe(f):sub(1, 239)
                if not shown:find("(" .. f.rule, 1, true) then r.too_long = framing.describe(f) end
            end
            deliver(rec)
            r.buf = r.buf:sub(n + 1)
            want = 1
        end
        pieces[1] = r.buf
        have = #r.buf
    end
    function r.finish()
        r.buf = table.concat(pieces)
        if r.error == nil and (#r.buf > 0 or dir.seq ~= nil) then
            r.error = { rule = "RECV-9", offset = dir.seq and #r.buf == 0 and dir.seq.offset or dir.offset }
        end
    end
    return r
end

local function chunks(data, pattern)
    local out, at, k = {}, 1, 0
    while at <= #data do
        local n = pattern[k % #pattern + 1]
        out[#out + 1] = data:sub(at, at + n - 1)
        at, k = at + n, k + 1
    end
    return out
end

-- Whether a receiver's result is one outcome of the manifest: its envelopes and first error.
local function matches(r, want)
    local want_envs, want_err = want.envelopes, want.error
    local ok = #r.envelopes == #want_envs
    for i = 1, math.min(#r.envelopes, #want_envs) do
        local g, w = r.envelopes[i], want_envs[i]
        if g.version ~= w.version or g.flags ~= w.flags or g.stream ~= w.stream or g.opcode ~= w.opcode
            or not same(w.body, g.body) or (w.framed ~= nil and w.framed ~= g.framed) then
            ok = false
        end
    end
    local rule = r.error and r.error.rule
    local wrule = want_err ~= json.null and want_err.rule or nil
    ok = ok and rule == wrule
    if ok and wrule then ok = r.error.offset == want_err.offset end
    return ok
end

-- `outcomes` lists what a conforming receiver may report: the manifest's expected result, and
-- for a server the alternatives the spec allows (server_receives_alternatives).
local function compare(id, r, outcomes)
    local ok = false
    for _, want in ipairs(outcomes) do ok = ok or matches(r, want) end
    local want = outcomes[1]
    local wrule = want.error ~= json.null and want.error.rule or nil
    check(ok, string.format("%s: %d envelopes (want %d), error %s@%s (want %s@%s%s)", id, #r.envelopes,
        #want.envelopes, tostring(r.error and r.error.rule), tostring(r.error and r.error.offset),
        tostring(wrule), tostring(wrule and want.error.offset),
        #outcomes > 1 and (" or one of " .. (#outcomes - 1) .. " alternatives") or ""))
    check(r.too_long == nil, id .. ": a finding's rule ID lies past the 239 bytes of its text Wireshark shows: " .. tostring(r.too_long))
end

local manifest = json.decode(read(root .. "/vectors/manifest.json"))
local patterns = { { 2147483647 } }
for _, p in ipairs(manifest.default_chunkings) do patterns[#patterns + 1] = p end

for _, case in ipairs(manifest.cases) do
    for _, pattern in ipairs(patterns) do
        local label = case.id .. " [" .. (pattern[1] == 2147483647 and "whole" or table.concat(pattern, ",")) .. "]"
        if case.kind == "frames" then
            local opts = { verify = true, max_body = case.max_envelope_body }
            local conv = framing.new_conversation()
            conv.negotiated = { format = case.format, checksum = case.checksum }
            local r = receiver(conv, "server", opts)
            r.dir.at_start = false
            for _, c in ipairs(chunks(read(root .. "/vectors/" .. case.input.file), pattern)) do r.feed(c) end
            r.finish()
            compare(label, r, { case.expected })
        else
            local opts = { verify = true, max_body = 16777216 }
            local conv = framing.new_conversation()
            local cs = read(root .. "/vectors/" .. case.client_stream.file)
            local ss = read(root .. "/vectors/" .. case.server_stream.file)
            local client = receiver(conv, "client", opts)   -- what the server receives
            local server = receiver(conv, "server", opts)   -- what the client receives
            local ra = case.server_responds_after
            local sw = case.server_switch_offset ~= json.null and case.server_switch_offset or #ss
            local plan = { { client, cs:sub(1, ra) }, { server, ss:sub(1, sw) }, { client, cs:sub(ra + 1) }, { server, ss:sub(sw + 1) } }
            for _, step in ipairs(plan) do
                for _, c in ipairs(chunks(step[2], pattern)) do step[1].feed(c) end
            end
            client.finish()
            server.finish()
            local outcomes = { case.expected.server_receives }
            for _, alt in ipairs(case.expected.server_receives_alternatives) do outcomes[#outcomes + 1] = alt end
            compare(label .. " server receives", client, outcomes)
            compare(label .. " client receives", server, { case.expected.client_receives })
            local sws = case.expected.client_receives.switch
            -- where the client's bytes turn framed matters only if the server side has not
            -- stopped at an error before that point (RECV-11)
            local cso = case.client_switch_offset
            local client_switch_ok = client.dir.switch_offset == cso
                or (client.error ~= nil and cso ~= json.null and client.error.offset <= cso)
            check((sws == json.null and server.dir.switch_offset == nil and conv.negotiated == nil)
                or (sws ~= json.null and conv.negotiated ~= nil and server.dir.switch_offset == sws.offset
                    and conv.negotiated.format == sws.format and conv.negotiated.checksum == sws.checksum
                    and client_switch_ok),
                label .. ": switch " .. tostring(server.dir.switch_offset) .. "/" .. tostring(client.dir.switch_offset)
                .. " " .. tostring(conv.negotiated and (conv.negotiated.format .. "/" .. conv.negotiated.checksum)))
        end
    end
end

t.finish("framing")
