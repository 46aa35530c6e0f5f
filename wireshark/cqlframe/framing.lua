-- cqlframe/framing.lua: the frame layer as a receiver sees it, on Lua strings, with no
-- Wireshark API, so the same code runs in the dissector and in the standalone tests.
--
-- A conversation holds two directions. Each direction is in one mode:
--   "unknown"   nothing decoded yet: the first bytes decide (envelope, or a frame whose CRC24
--               verifies: a capture that starts mid-connection)
--   "unframed"  envelopes back to back (handshake, LIFE-1; or protocol v4 and lower, LIFE-2)
--   "await"     the client sent STARTUP (v5+) and waits for the response (LIFE-6)
--   "framed"    frames of conv format/checksum (LIFE-4, LIFE-5, NEG-1, NEG-5)
--   "stopped"   a header failed its CRC24 (or the stream never synchronised): frame boundaries
--               are lost; everything after it is shown as undecoded (RECV-1, RECV-11); or its
--               checksum bit disagrees (RECV-3), found at the header as a receiver does; or the
--               other direction stopped before the switch, which this one needed ("orphaned":
--               then judged through the packet of its STARTUP, whose later bytes break LIFE-6)
--
-- pdu(conv, dir, s, pos, avail, opts) looks at the next unit (one envelope or one frame) and
-- returns its length, or needs more bytes; process(conv, dir, s, pos, len, ctx, opts) decodes
-- that unit, advances the state and returns a record describing what it found (fields,
-- checksum results, content, envelopes, expert findings with rule IDs).
--
-- Findings name the rules as the kit's rules engine (`cqlframe check`, reference/harness/src/
-- rules/) does: `rule` as the receiver detects it (RECV-2), `sender` the sender's rule behind it
-- where that differs (CRC-2). wireshark/tests/check_judge.py keeps the two equal.

local crc = require("cqlframe.crc")
local lz4 = require("cqlframe.lz4")
local utf8_valid = require("cqlframe.utf8").valid

local byte, sub, concat = string.byte, string.sub, table.concat
local floor = math.floor

local M = {}

M.OPCODES = {
    [0x00] = "ERROR", [0x01] = "STARTUP", [0x02] = "READY", [0x03] = "AUTHENTICATE",
    [0x05] = "OPTIONS", [0x06] = "SUPPORTED", [0x07] = "QUERY", [0x08] = "RESULT",
    [0x09] = "PREPARE", [0x0A] = "EXECUTE", [0x0B] = "REGISTER", [0x0C] = "EVENT",
    [0x0D] = "BATCH", [0x0E] = "AUTH_CHALLENGE", [0x0F] = "AUTH_RESPONSE", [0x10] = "AUTH_SUCCESS",
}

M.MAX_PAYLOAD = 131071

--- Frame header size by format: header word and CRC24 (FMT-2, FMT-7).
M.HEADER_SIZE = { uncompressed = 6, lz4 = 8 }

local function u16be(s, p) local a, b = byte(s, p, p + 1); return a * 256 + b end
local function s16be(s, p) local v = u16be(s, p); if v >= 32768 then v = v - 65536 end; return v end
local function s32be(s, p)
    local a, b, c, d = byte(s, p, p + 3)
    local v = ((a * 256 + b) * 256 + c) * 256 + d
    if v >= 2147483648 then v = v - 4294967296 end
    return v
end

--- The unsigned little-endian integer of the n bytes at s[p..] (the frame layer's byte order, FMT-1).
local function uint_le(s, p, n)
    local v = 0
    for k = p + n - 1, p, -1 do v = v * 256 + byte(s, k) end
    return v
end
M.uint_le = uint_le

-- The retired versions v1 and v2: their envelope header has 8 bytes, with a one-byte stream
-- (LIFE-14; RETIRED_VERSIONS in reference/cqlframe/src/envelope.rs).
local RETIRED_VERSIONS = { [0x01] = true, [0x02] = true }

--- The length of an envelope header whose version byte is `version`: 8 for a retired version,
--- else 9 (header_len in reference/cqlframe/src/envelope.rs).
function M.header_len(version)
    return RETIRED_VERSIONS[version % 128] and 8 or 9
end

--- Envelope header at s[pos..pos+8], as frames carry it whatever its version byte (ENV-1).
function M.envelope_header(s, pos)
    local version, flags, _, _, opcode = byte(s, pos, pos + 4)
    return {
        version = version, flags = flags, stream = s16be(s, pos + 2), opcode = opcode,
        length = s32be(s, pos + 5), protocol = version % 128, response = version >= 128,
        header_len = 9,
    }
end

--- Unframed envelope header at s[pos..], in the layout its version byte names: 8 bytes with a
--- one-byte stream for a retired version (LIFE-14), else as M.envelope_header.
function M.unframed_envelope_header(s, pos)
    local version = byte(s, pos)
    if M.header_len(version) == 9 then return M.envelope_header(s, pos) end
    local flags, stream, opcode = byte(s, pos + 1, pos + 3)
    return {
        version = version, flags = flags, stream = stream >= 128 and stream - 256 or stream,
        opcode = opcode, length = s32be(s, pos + 4), protocol = version % 128,
        response = version >= 128, header_len = 8,
    }
end

--- True if the byte at pos is a version byte of protocol v3..v6: all a receiver asks of an
--- unframed envelope's first byte before it reads the length (LIFE-3, LIFE-4).
function M.envelope_version_ok(s, pos)
    local v = byte(s, pos) % 128
    return v >= 3 and v <= 6
end

-- Version bytes a client may probe with that the reference does not speak (v1, v2, v7, DSE_V1,
-- DSE_V2): the server refuses such a request and no rule is broken (LIFE-14; in cqlframe, a
-- ConnectionEvent::Refused).
local UNSPOKEN_VERSIONS = { [0x01] = true, [0x02] = true, [0x07] = true, [0x41] = true, [0x42] = true }

--- True if the byte at pos starts an envelope a receiver of dir reads before the switch: a
--- version probe from the client, the refusal of a retired one from the server (LIFE-14).
local function unframed_version_ok(dir, s, pos)
    local b = byte(s, pos)
    return M.envelope_version_ok(s, pos) or (dir.role ~= "server" and UNSPOKEN_VERSIONS[b] == true)
        or (dir.role ~= "client" and b >= 128 and RETIRED_VERSIONS[b - 128] == true)
end

-- Whether `env` is a client's version probe, which the server refuses without processing it
-- (LIFE-14).
local function probe(env)
    return not env.response and UNSPOKEN_VERSIONS[env.version] == true
end

--- True if the bytes at pos begin like an envelope header of protocol v3..v6 (for a capture
--- without the connection's start, where data must be told from envelopes, and for a frame
--- header that fails its CRC24). Six bytes decide it, as in the reference's
--- starts_like_envelope_header.
function M.plausible_envelope(s, pos)
    local version, flags, _, _, opcode, length_high = byte(s, pos, pos + 5)
    local v = version % 128
    if v < 3 or v > 6 or flags >= 0x20 then return false end
    if M.OPCODES[opcode] == nil then return false end
    return length_high < 0x10                         -- a body length of 0 to 256 MiB
end

--- Frame header at s[pos..] in `format` (FMT-2..FMT-11). Needs 6 or 8 bytes.
function M.frame_header(s, pos, format)
    local size = M.HEADER_SIZE[format]
    -- the 24- or 40-bit header word, exact in a double and in a Lua 5.4 integer
    local word = uint_le(s, pos, size - 3)
    local h = { format = format, size = size, word = word, length = word % 131072 }
    local rest = floor(word / 131072)                 -- the bits above the payload length
    if format == "lz4" then
        h.uncompressed_length = rest % 131072         -- bits 17-33
        rest = floor(rest / 131072)
    end
    h.self_contained = rest % 2 == 1                  -- bit 17 (lz4: 34)
    h.checksum_bit = floor(rest / 2) % 2 == 1         -- bit 18 (lz4: 35)
    h.reserved = floor(rest / 4)                      -- bits 19-23 (lz4: 36-39)
    h.crc24 = uint_le(s, pos + size - 3, 3)
    h.crc24_computed = crc.crc24(s, pos, pos + size - 4)
    h.crc24_ok = h.crc24 == h.crc24_computed
    h.total = h.size + h.length + 4
    return h
end

-- Readers of the body notations (native_protocol_v5.spec 3) in s[pos..stop]: each returns the
-- value and the position after it, or nil if it runs past stop.
local function read_short(s, pos, stop)
    if pos + 1 > stop then return nil end
    return u16be(s, pos), pos + 2
end

local function read_string(s, pos, stop)
    local l
    l, pos = read_short(s, pos, stop)
    if l == nil or pos + l - 1 > stop then return nil end
    -- a [string] is UTF-8: one that is not makes the body malformed, as the reference reads it
    -- (BodyError::NotUtf8 in reference/cqlframe/src/body.rs); what is kept is shown in findings
    local text = sub(s, pos, pos + l - 1)
    if not utf8_valid(text) then return nil end
    return text, pos + l
end

local function read_string_list(s, pos, stop)
    local n
    n, pos = read_short(s, pos, stop)
    if n == nil then return nil end
    local list = {}
    for k = 1, n do
        list[k], pos = read_string(s, pos, stop)
        if pos == nil then return nil end
    end
    return list, pos
end

-- A map of [string] keys, upper-cased, to values read by read_value, the first of a repeated
-- key as the reference reads it; nil if malformed. Second result: a key came twice (NEG-9).
local function read_map(s, pos, stop, read_value)
    local n
    n, pos = read_short(s, pos, stop)
    if n == nil then return nil end
    local map, repeated = {}, false
    for _ = 1, n do
        local key, value
        key, pos = read_string(s, pos, stop)
        if key == nil then return nil end
        value, pos = read_value(s, pos, stop)
        if value == nil then return nil end
        key = key:upper()
        if map[key] == nil then map[key] = value else repeated = true end
    end
    return map, repeated
end

function M.new_conversation()
    return { dirs = {}, startup = nil, supported = nil, negotiated = nil }
end

--- The state of one direction of `conv`, created on first use. `key` names the sender.
function M.direction(conv, key, role)
    local d = conv.dirs[key]
    if d == nil then
        d = { key = key, role = role, mode = "unknown", offset = 0, seq = nil, errors = 0, first_error = nil }
        conv.dirs[key] = d
    end
    return d
end

--- A shallow copy of the array `t`.
local function copy(t)
    local r = {}
    for i = 1, #t do r[i] = t[i] end
    return r
end

local function other(conv, dir)
    for k, d in pairs(conv.dirs) do
        if k ~= dir.key then return d end
    end
    return nil
end

-- Each direction is decoded as its receiver frames: the server's as the client asked, the
-- client's as the server decided (conv.negotiated.server, when that differs).
local function set_framed(dir, conv)
    local n = conv.negotiated
    local settings = (dir.key == n.client_dir and n.server) or n
    dir.mode = "framed"
    dir.format = settings.format
    dir.checksum = settings.checksum
    dir.switch_offset = dir.offset
end

-- Classification of the first bytes of a direction in mode "unknown". Returns "envelope",
-- "lz4", "uncompressed", "more" or "garbage".
local function classify(conv, dir, s, pos, avail)
    if conv.negotiated then return "negotiated" end
    if dir.at_start then
        -- a receiver reads the first bytes as an envelope whatever they are (LIFE-3, LIFE-4)
        if avail < 1 or avail < M.header_len(byte(s, pos)) then return "more" end
        if unframed_version_ok(dir, s, pos) then return "envelope" end
    end
    if conv.startup ~= nil or conv.supported ~= nil then
        if avail < 9 then return "more" end
        if M.plausible_envelope(s, pos) then return "envelope" end
    end
    for _, format in ipairs({ "uncompressed", "lz4" }) do
        if avail >= M.HEADER_SIZE[format] and M.frame_header(s, pos, format).crc24_ok then return format end
    end
    if avail < 9 then return "more" end
    if M.plausible_envelope(s, pos) then return "envelope" end
    return "garbage"
end

--- The next unit at s[pos..pos+avail-1]. Returns:
---   n            a whole unit of n bytes is available (n <= avail)
---   nil, "more", k   at least k more bytes are needed (k may be nil: one more segment)
---   avail, "garbage"   nothing decodable: the rest is shown as undecoded
function M.pdu(conv, dir, s, pos, avail, opts)
    if dir.mode == "stopped" then return avail, "garbage" end
    if dir.mode == "unknown" then
        local c = classify(conv, dir, s, pos, avail)
        if c == "more" then return nil, "more", nil end
        if c == "garbage" then
            if dir.at_start then
                dir.mode = "stopped"
                dir.stop_reason = "LIFE-1"
            end
            return avail, "garbage"
        end
        if c == "negotiated" then
            set_framed(dir, conv)
        elseif c == "envelope" then
            dir.mode = "unframed"
        else
            dir.mode = "framed"
            dir.format = c
            dir.detected = true
            dir.checksum = M.frame_header(s, pos, c).checksum_bit and "crc32c" or "crc32"
            dir.switch_offset = dir.offset
        end
    end
    if dir.mode == "framed" then
        local hs = M.HEADER_SIZE[dir.format]
        if avail < hs then return nil, "more", hs - avail end
        local h = M.frame_header(s, pos, dir.format)
        -- a failing uncompressed header is held until 8 bytes are in, to tell whether they
        -- verify as an LZ4 header (LIFE-8), as the reference's FrameDecoder holds it
        if not h.crc24_ok and avail < M.HEADER_SIZE.lz4 then return nil, "more", M.HEADER_SIZE.lz4 - avail end
        if not h.crc24_ok then return avail, "badheader" end
        -- a checksum bit that disagrees fails the frame at its header (RECV-3), as a receiver
        -- finds it: the direction stops there, whether or not the rest of the frame comes
        if h.checksum_bit ~= (dir.checksum == "crc32c") then return avail, "badbit" end
        if avail < h.total then return nil, "more", h.total - avail end
        return h.total
    end
    -- an orphaned client's bytes after its STARTUP: each breaks LIFE-6 at once, as the kit's
    -- judge finds them (process() stops the direction instead in a later packet)
    if dir.mode == "await" and dir.orphaned then return avail, "badenvelope" end
    -- unframed, await: what the receiver checks of an unframed envelope header (the version,
    -- then the length: ENV-3, RECV-12)
    if avail < 1 then return nil, "more", 1 end
    local hl = M.header_len(byte(s, pos))
    if avail < hl then return nil, "more", hl - avail end
    if not unframed_version_ok(dir, s, pos) then return avail, "badenvelope" end
    local len = M.unframed_envelope_header(s, pos).length
    if len < 0 or len > opts.max_body then return avail, "badenvelope" end
    if avail < hl + len then return nil, "more", hl + len - avail end
    return hl + len
end

-- Appends a finding to `list` (a record's or an envelope's). A finding made after the
-- direction's first framing error is `past` it: a receiver has stopped there (RECV-11) and
-- reports nothing more, while the dissector goes on where it still knows the frame boundaries.
local function finding(dir, list, key, rule, text, sender)
    local f = { key = key, rule = rule, sender = sender, text = text, past = dir.first_error }
    list[#list + 1] = f
    return f
end

-- A framing error: the receiver stops decoding the direction here (RECV-11).
local function framing_error(dir, rec, key, rule, text, sender)
    finding(dir, rec.findings, key, rule, text, sender).fatal = true
    dir.errors = dir.errors + 1
    if dir.first_error == nil then
        dir.first_error = { rule = rule, offset = rec.offset, key = key }
    end
end

--- Where the spec states a rule: its anchor in the spec as spec/build.sh renders it (the rule
--- ID is the anchor), as `cqlframe check` gives it.
function M.spec_anchor(rule)
    return "framing_v6.html#" .. rule
end

--- The text of a finding as the expert info shows it: "TEXT (RULE) [spec ANCHOR]", or "TEXT
--- (RULE; sender rule SENDER) [spec ANCHOR, ANCHOR]", and for a finding past the first framing
--- error a bracketed tail saying so.
function M.describe(f)
    local tag = f.sender and (f.rule .. "; sender rule " .. f.sender) or f.rule
    local spec = M.spec_anchor(f.rule) .. (f.sender and (", " .. M.spec_anchor(f.sender)) or "")
    local text = f.text .. " (" .. tag .. ") [spec " .. spec .. "]"
    if f.past then
        text = text .. string.format(" [past the framing error %s at stream offset %d: a receiver stops there, RECV-11]", f.past.rule, f.past.offset)
    end
    return text
end

-- The bytes where an unframed envelope should be are not one: the client broke LIFE-3 (STARTUP
-- and OPTIONS go unframed), the server LIFE-4 (its STARTUP response too).
local function not_envelope(dir, rec, text)
    if dir.role == "server" then
        framing_error(dir, rec, "not_envelope", "LIFE-4", text)
    else
        framing_error(dir, rec, "not_envelope", "LIFE-3", text .. " (the client sends STARTUP unframed)")
    end
end

-- Envelope-level rules (ENV-2, ENV-5): an envelope with a wrong version byte, or a v6-beta one
-- without USE_BETA, is refused on its own, not a framing error; the COMPRESSION flag on a framed
-- connection breaks the sender's recommendation ENV-4 (the receiver ignores it, ENV-6). For an
-- unframed envelope only the response bit is checked, since the version is still being agreed.
-- Returns true if the receiver refuses the envelope.
local function envelope_checks(conv, dir, env, framed)
    local list = {}
    env.findings = list
    local sender_is_server = dir.role == "server"
    local refused = false
    if framed then
        local protocol = conv.negotiated and conv.negotiated.protocol or dir.protocol or env.protocol
        dir.protocol = protocol
        local expected = protocol + (sender_is_server and 128 or 0)
        if env.version ~= expected then
            finding(dir, list, "env_version", "ENV-2", string.format("version byte 0x%02x, expected 0x%02x: the receiver refuses the envelope, not a framing error", env.version, expected)).at = "version"
            refused = true
        end
    elseif dir.role and env.response ~= sender_is_server then
        finding(dir, list, "env_version", "ENV-2", string.format("%s bit in an envelope sent by the %s: the receiver refuses the envelope, not a framing error", env.response and "response" or "no response", dir.role)).at = "version"
        refused = true
    end
    if not refused and env.protocol == 6 and env.flags % 32 < 16 then
        finding(dir, list, "use_beta", "ENV-5", "v6-beta envelope without USE_BETA").at = "flags"
        refused = true
    end
    if framed and env.flags % 2 == 1 then
        finding(dir, list, "compression_flag", "ENV-4", "COMPRESSION flag set on a framed connection (a recommendation: receivers ignore the flag, ENV-6)").at = "flags"
    end
    return refused
end

-- Whether responses are still paired with requests: before the switch, on a connection that
-- neither went v4 (LIFE-2) nor had its STARTUP's version refused (LIFE-11).
local function pairing(conv)
    return not conv.legacy and not conv.refused and conv.negotiated == nil
end

-- A client request before STARTUP awaits its answer (LIFE-13), whether the server processes it
-- or refuses it on its own (ENV-2, ENV-5, a version probe). conv.outstanding lists { stream,
-- protocol } of the requests not yet answered; it is replaced, never changed in place, so
-- that snapshots may share it.
local function await_answer(conv, env)
    if env.response or conv.startup ~= nil or not pairing(conv) then return end
    local outstanding = copy(conv.outstanding or {})
    outstanding[#outstanding + 1] = { stream = env.stream, protocol = env.protocol }
    conv.outstanding = outstanding
end

-- Before the switch a response pairs with an outstanding request by stream id. An ERROR in
-- another version refuses a version on any stream (LIFE-11): while STARTUP is outstanding the
-- STARTUP's; before it, that of the outstanding requests in another version, which it answers,
-- and of those in a retired version, which a server refuses in that version (LIFE-14).
-- A PROTOCOL_ERROR on stream 0 that answers no request is the server's report of a framing
-- error in the client's bytes (ERR-1, ERR-4), no unpaired response. Anything else breaks
-- LIFE-13, and the client stops. Judged only on a connection captured from its start, as the
-- kit's judge does (reference/cqlframe/src/connection.rs). `code` is an ERROR's error code.
local function pair_response(conv, dir, env, rec, code)
    local outstanding = conv.outstanding or {}
    local st = conv.startup
    if env.opcode == 0x00 then
        if st ~= nil and env.protocol ~= st.protocol then return true end
        if st == nil then
            local kept = {}
            for _, r in ipairs(outstanding) do
                if r.protocol == env.protocol and not RETIRED_VERSIONS[r.protocol] then kept[#kept + 1] = r end
            end
            if #kept < #outstanding then
                conv.outstanding = kept
                return true
            end
        end
    end
    local answered, rest = false, {}
    for _, r in ipairs(outstanding) do
        if r.stream == env.stream and not answered then
            answered = true
        else
            rest[#rest + 1] = r
        end
    end
    conv.outstanding = rest
    local on_startup = st ~= nil and env.stream == st.stream
    local startup_answer = on_startup and (env.opcode == 0x00 or env.opcode == 0x02 or env.opcode == 0x03)
    local reports_fault = env.opcode == 0x00 and env.stream == 0 and code == 0x000A
    if startup_answer or (answered and not on_startup) or reports_fault or not dir.at_start then
        return true
    end
    framing_error(dir, rec, "unpaired_response", "LIFE-13", string.format("before the switch the server sent %s on stream %d, which answers no outstanding request", M.OPCODES[env.opcode] or string.format("opcode 0x%02x", env.opcode), env.stream))
    dir.mode = "stopped"
    dir.stop_reason = "LIFE-13"
    return false
end

-- The server's decision on the STARTUP `st` (negotiate, reference/cqlframe/src/connection.rs):
-- the payload checksum it frames with, or nil and the rule and reason for which it must refuse
-- the STARTUP (NEG-9, NEG-2, NEG-6). `accepted` lists the checksums the node accepts, false for
-- a node that ignores FRAME_CHECKSUM.
local function decide(st, accepted)
    if st.repeated then return nil, "NEG-9", "a key comes more than once" end
    if st.protocol < 5 then return "crc32" end
    local c, fc = st.options.COMPRESSION, st.options.FRAME_CHECKSUM
    if c and c:lower() ~= "lz4" then return nil, "NEG-2", "COMPRESSION=" .. c end
    if not (fc and accepted) then return "crc32" end
    for _, a in ipairs(accepted) do
        local name = a:lower()
        if name == fc:lower() and (name == "crc32" or name == "crc32c") then return name end
    end
    return nil, "NEG-6", "FRAME_CHECKSUM=" .. fc .. ", which the node does not accept"
end

-- The checksums the node accepts as its SUPPORTED listed them (none listed: false, it ignores
-- FRAME_CHECKSUM); `unknown` when no SUPPORTED was seen.
local function accepted_checksums(conv, unknown)
    if conv.supported then return conv.supported.FRAME_CHECKSUMS or false end
    return unknown
end

-- The format and checksum the server decodes the client's frames with after READY or
-- AUTHENTICATE, as the kit's judge decides them: the STARTUP's options where the server accepts
-- them (NEG-1, NEG-5), CRC32 and CRC32C being accepted when no SUPPORTED was seen; after
-- accepting a STARTUP it had to refuse, uncompressed with CRC32. nil when that is what the
-- client `asked` for.
local function server_settings(conv, st, asked)
    local checksum = decide(st, accepted_checksums(conv, { "crc32", "crc32c" }))
    local decided = { format = "uncompressed", checksum = "crc32" }
    if checksum then
        decided = { format = st.options.COMPRESSION and "lz4" or "uncompressed", checksum = checksum }
    end
    if decided.format == asked.format and decided.checksum == asked.checksum then return nil end
    return decided
end

-- Whether the response `env`, sent by `dir`, ends the wait for the STARTUP `st` of the other
-- direction: the response on its stream (LIFE-5, LIFE-8), or an ERROR in another version, on
-- any stream (LIFE-11); ends_startup_wait in reference/harness/src/rules/judge.rs.
local function ends_startup_wait(st, dir, env)
    if st.dir == dir.key then return false end
    if env.opcode == 0x00 and env.protocol ~= st.protocol then return true end
    return env.stream == st.stream and (env.opcode == 0x00 or env.opcode == 0x02 or env.opcode == 0x03)
end

-- What the STARTUP `st` leaves undecided for want of what the node accepts (JUDGE-11): `rule`
-- (NEG-4 at the STARTUP, NEG-6 at its answer) cannot be judged when it asks a FRAME_CHECKSUM
-- other than crc32 and no SUPPORTED said what the node lists. In the words of check's notes
-- (Unjudged in reference/harness/src/rules/unjudged.rs); nil when there is nothing to say.
local function unjudged_checksum(conv, st, rule, offset)
    local fc = st.options.FRAME_CHECKSUM
    if st.malformed or conv.supported ~= nil or fc == nil or fc:lower() == "crc32" then return nil end
    if rule == "NEG-4" then
        return string.format("NEG-4 not judged: the STARTUP at byte %d of client-to-server asks FRAME_CHECKSUM=%s, and no SUPPORTED of the node came before it (JUDGE-11)", offset, fc)
    end
    return string.format("%s not judged: the server took or refused FRAME_CHECKSUM=%s with the answer at byte %d of server-to-client, and what the node accepts is unknown (JUDGE-11)", rule, fc, offset)
end

--- The note for a STARTUP that could switch the connection (v5 or later) and was never
--- answered: how the handshake would end is unknown (JUDGE-11). nil when there is none.
function M.unanswered_startup(conv)
    local st = conv.asked
    if not st or st.protocol < 5 then return nil end
    return string.format("the STARTUP at byte %d of client-to-server was never answered: how the handshake would end is unknown (JUDGE-11)", st.offset)
end

-- NEG-2, NEG-6, NEG-9: the server's response to the client's first STARTUP (conv.asked; in its
-- version, on its stream) takes a STARTUP it must refuse with ERROR (PROTOCOL_ERROR), or refuses
-- it with another error code. Judged with what SUPPORTED said of the node; with no SUPPORTED,
-- not the checksums it accepts (missed_refusal, reference/harness/src/rules/judge.rs). `code` is
-- an ERROR's error code.
local function judge_response(conv, dir, env, rec, code)
    local st = conv.asked
    if not st or not ends_startup_wait(st, dir, env) then return end
    conv.asked = false
    if env.protocol ~= st.protocol then return end
    -- an ERROR (PROTOCOL_ERROR) is the refusal NEG-6 asks for, and a v4 server ignores the key
    -- (NEG-7): NEG-6 is kept whatever the node accepts (keeps_neg6 in the kit's judge)
    if code ~= 0x000A and st.protocol >= 5 then
        rec.unjudged = unjudged_checksum(conv, st, "NEG-6", rec.offset)
    end
    if st.malformed or code == 0x000A then return end
    local checksum, rule, why = decide(st, accepted_checksums(conv, false))
    if checksum then return end
    local what = M.OPCODES[env.opcode]
    if env.opcode == 0x00 then what = code and string.format("ERROR 0x%04x", code) or "a malformed ERROR" end
    finding(dir, rec.findings, "missed_refusal", rule, "the server answered with " .. what .. " a STARTUP it must refuse with ERROR (PROTOCOL_ERROR): " .. why)
end

-- Handshake bookkeeping for an unframed envelope (LIFE-1..LIFE-9, NEG-1..NEG-8, LIFE-13).
local function handshake(conv, dir, env, s, pos, rec, ctx)
    local body = pos + env.header_len
    local stop = body + env.length - 1
    local code = env.opcode == 0x00 and env.length >= 4 and s32be(s, body) or nil   -- [int]
    if env.response and pairing(conv) and not pair_response(conv, dir, env, rec, code) then return end
    await_answer(conv, env)
    if env.response then judge_response(conv, dir, env, rec, code) end
    if env.opcode == 0x01 and not env.response then
        local opts, repeated = read_map(s, body, stop, read_string)   -- [string map]
        local st = { stream = env.stream, protocol = env.protocol, options = opts or {}, malformed = opts == nil, repeated = repeated, dir = dir.key, offset = rec.offset }
        if conv.asked == nil then
            conv.asked = st
            rec.unjudged = unjudged_checksum(conv, st, "NEG-4", rec.offset)
        end
        opts = st.options
        -- NEG-4 holds for a STARTUP of any version: a v4 server ignores the key (NEG-7), but a
        -- client that sends it unlisted does not look at SUPPORTED
        local fc = opts.FRAME_CHECKSUM
        if fc and fc:lower() ~= "crc32" then
            local listed = conv.supported and conv.supported.FRAME_CHECKSUMS
            local ok = false
            for _, v in ipairs(listed or {}) do if v:lower() == fc:lower() then ok = true end end
            if conv.supported and not ok then
                finding(dir, rec.findings, "neg_unlisted", "NEG-4", "FRAME_CHECKSUM=" .. fc .. " was not listed in FRAME_CHECKSUMS of SUPPORTED")
            end
        end
        if env.protocol >= 5 then
            conv.startup = st
            dir.mode = "await"
            dir.startup_number = ctx.delivery or ctx.number
            dir.role = "client"
        else
            dir.legacy = true
            conv.legacy = true
        end
    elseif env.opcode == 0x06 and env.response then
        conv.supported = read_map(s, body, stop, read_string_list) or {}   -- [string multimap]
    elseif env.response and conv.startup and ends_startup_wait(conv.startup, dir, env) then
        local st = conv.startup
        local client = conv.dirs[st.dir]
        if env.protocol ~= st.protocol then
            -- an ERROR in another version, on any stream: the version is refused, no switch
            -- (LIFE-11; the client retries lower, LIFE-9)
            conv.startup = nil
            conv.refused = true
            if client and client.mode == "await" then client.mode = "unframed" end
            rec.no_switch = "v" .. env.protocol .. " ERROR to a v" .. st.protocol .. " STARTUP: protocol version refused, no switch (LIFE-11)"
            return
        end
        local n
        if env.opcode == 0x00 then
            n = { format = "uncompressed", checksum = "crc32", reason = "ERROR response to STARTUP (LIFE-8)" }
            -- what the refused STARTUP asked: a frame of it, from either side, broke LIFE-8
            local c, fc = st.options.COMPRESSION, st.options.FRAME_CHECKSUM
            n.refused = { lz4 = c ~= nil and c:lower() == "lz4", crc32c = fc ~= nil and fc:lower() == "crc32c" }
        else
            local c = st.options.COMPRESSION
            local fc = st.options.FRAME_CHECKSUM
            n = {
                format = (c and c:lower() == "lz4") and "lz4" or "uncompressed",
                checksum = (fc and fc:lower() == "crc32c") and "crc32c" or "crc32",
                reason = M.OPCODES[env.opcode] .. " response to STARTUP (LIFE-4, LIFE-5)",
            }
        end
        n.protocol = st.protocol
        n.client_dir = st.dir
        -- a FRAME_CHECKSUM other than crc32 asked of a node whose SUPPORTED has no
        -- FRAME_CHECKSUMS: it frames CRC32, the client as it asked (checksum_ignored in
        -- reference/harness/src/rules/judge.rs)
        local fc = st.options.FRAME_CHECKSUM
        n.checksum_ignored = env.opcode ~= 0x00 and fc ~= nil and fc:lower() ~= "crc32"
            and accepted_checksums(conv, nil) == false
        if env.opcode ~= 0x00 then n.server = server_settings(conv, st, n) end
        conv.negotiated = n
        conv.startup = nil
        dir.role = "server"
        set_framed(dir, conv)
        dir.switch_offset = dir.offset + rec.length
        if client then
            client.role = "client"
            set_framed(client, conv)
        end
        rec.switch = n
    end
end

-- Checks an envelope header's body length (ENV-3, RECV-12); false if it is negative.
local function check_length(dir, rec, env, opts)
    if env.length < 0 then
        framing_error(dir, rec, "negative_length", "ENV-3", "negative envelope body length " .. env.length)
        return false
    end
    if env.length > opts.max_body then
        framing_error(dir, rec, "too_large", "RECV-12", string.format("envelope body length %d exceeds the limit %d", env.length, opts.max_body))
    end
    return true
end

-- Adds a whole envelope to rec; the first one tells a direction of unknown role its sender.
local function add_envelope(dir, rec, env)
    if dir.role == nil then dir.role = env.response and "server" or "client" end
    rec.envelopes[#rec.envelopes + 1] = env
end

-- Splits the content of a self-contained frame into envelopes (SEND-2, RECV-5, ENV-3, RECV-12).
local function split_envelopes(dir, rec, content, opts)
    local p, n = 1, #content
    while p <= n do
        local left = n - p + 1
        if left < 9 then
            framing_error(dir, rec, "partial_envelope", "RECV-5", string.format("self-contained frame ends inside an envelope header (%d of 9 bytes)", left), "SEND-2")
            rec.partial = { start = p, length = left }
            return
        end
        local env = M.envelope_header(content, p)
        if not check_length(dir, rec, env, opts) then
            rec.partial = { start = p, length = left }
            return
        end
        if 9 + env.length > left then
            framing_error(dir, rec, "partial_envelope", "RECV-5", string.format("self-contained frame ends inside an envelope (%d of %d bytes)", left, 9 + env.length), "SEND-2")
            rec.partial = { start = p, length = left }
            return
        end
        env.start = p
        env.size = 9 + env.length
        add_envelope(dir, rec, env)
        p = p + env.size
    end
end

-- SEND-7: a sequence's frames but the last hold at least this many bytes (the reference's
-- SEQUENCE_FILL_FLOOR, reference/cqlframe/src/encoder.rs: Apache Cassandra's smallest fill).
M.SEQUENCE_FILL_FLOOR = 131054

-- Appends a non-self-contained frame's content to the direction's sequence (RECV-6, RECV-7,
-- RECV-10, SEND-7).
local function sequence_frame(conv, dir, rec, content, ctx, opts)
    if #content == 0 then
        framing_error(dir, rec, "empty_continuation", "RECV-10", "non-self-contained frame with no content", "SEND-6")
        return
    end
    local seq = dir.seq
    if seq == nil then
        seq = { parts = {}, have = 0, need = nil, frames = {}, offset = rec.offset }
        dir.seq = seq
    end
    seq.parts[#seq.parts + 1] = content
    seq.have = seq.have + #content
    seq.frames[#seq.frames + 1] = { number = ctx.number, offset = rec.offset, length = #content }
    rec.sequence = { index = #seq.frames, have = seq.have, first_offset = seq.offset }
    if seq.need == nil and seq.have >= 9 then
        local head = concat(seq.parts)
        seq.parts = { head }
        local env = M.envelope_header(head, 1)
        if not check_length(dir, rec, env, opts) then
            dir.seq = nil
            return
        end
        seq.need = 9 + env.length
    end
    rec.sequence.need = seq.need
    if seq.need and seq.have > seq.need then
        framing_error(dir, rec, "overshoot", "RECV-7", string.format("sequence carries %d bytes past the envelope's %d", seq.have - seq.need, seq.need), "SEND-3")
        dir.seq = nil
        return
    end
    if seq.need and seq.have == seq.need then
        local data = concat(seq.parts)
        local env = M.envelope_header(data, 1)
        env.start = 1
        env.size = #data
        env.reassembled = { data = data, frames = seq.frames, offset = seq.offset }
        add_envelope(dir, rec, env)
        envelope_checks(conv, dir, env, true)
        local short = {}
        for i = 1, #seq.frames - 1 do
            if seq.frames[i].length < M.SEQUENCE_FILL_FLOOR then short[#short + 1] = seq.frames[i].length end
        end
        if #short > 0 then
            -- at most 8 lengths: Wireshark shows 239 bytes of an expert info's text, and the rule ID
            -- comes at its end
            local listed = table.concat(short, ", ", 1, math.min(#short, 8))
            if #short > 8 then listed = string.format("%s, ... %d frames in all", listed, #short) end
            finding(dir, rec.findings, "sequence_fill", "SEND-7", string.format("frames of the sequence but the last hold fewer than %d bytes (%s): a recommendation", M.SEQUENCE_FILL_FLOOR, listed))
        end
        rec.sequence.complete = true
        dir.seq = nil
    end
end

-- Decodes one unit; M.process below adds what a framing error means for the other direction.
local function process_unit(conv, dir, s, pos, len, kind, ctx, opts)
    local rec = { offset = dir.offset, pos = pos, length = len, findings = {}, envelopes = {} }
    -- An orphaned client is judged through the packet of its STARTUP (bytes written with it were
    -- sent before any response could come, LIFE-6) and no further: the kit's judge stops it at
    -- its next segment. ctx.delivery, where given, numbers the pieces of stream TCP reassembly
    -- delivers (a packet that fills a hole delivers the segments held behind it as more pieces).
    if dir.mode == "await" and dir.orphaned and (ctx.delivery or ctx.number) ~= dir.startup_number then
        -- stopped by bytes of its own, as the kit's judge stops it (a gap after says nothing)
        dir.mode, dir.stop_reason, dir.own_bytes_stopped = "stopped", "orphaned", true
    end
    if dir.first_error and dir.mode ~= "stopped" then
        rec.after_error = dir.first_error
    end
    if kind == "garbage" or kind == "badheader" or kind == "badbit" or kind == "badenvelope" then
        rec.kind = "undecoded"
        if kind == "badbit" or kind == "badheader" then
            local h = M.frame_header(s, pos, dir.format)
            rec.kind = "frame"
            rec.header = h
            rec.format = dir.format
            rec.checksum = dir.checksum
            -- why the frame is shown undecoded
            rec.truncated = kind == "badbit" and "checksum bit disagrees" or "header CRC24 mismatch"
        end
        if kind == "badbit" then
            -- asked of a node that ignores FRAME_CHECKSUM, the bits disagree by the client's NEG-4
            local n = conv.negotiated
            local sender = n and n.checksum_ignored and "NEG-4" or "FMT-13"
            -- a bit set as the STARTUP refused with ERROR asked (LIFE-8)
            if n and n.refused and n.refused.crc32c and rec.header.checksum_bit then sender = "LIFE-8" end
            framing_error(dir, rec, "checksum_bit", "RECV-3", string.format("checksum bit %d but the connection uses %s", rec.header.checksum_bit and 1 or 0, dir.checksum), sender)
            dir.mode = "stopped"
            dir.stop_reason = "RECV-3"
        elseif kind == "badheader" then
            local h = rec.header
            local text = string.format("header CRC24 %06x, computed %06x: frame boundaries lost", h.crc24, h.crc24_computed)
            -- the reference's unframed_envelope: the header's six bytes read as an envelope's
            local unframed = M.plausible_envelope(s, pos)
            -- its sender did not frame: the client broke LIFE-5, the server LIFE-4
            local sender = dir.role == "client" and "LIFE-5" or "LIFE-4"
            if not unframed then sender = "CRC-1" end
            -- the reference's other_format: an LZ4 header after an ERROR refused a STARTUP that
            -- asked for LZ4, whose sender framed as if it had been taken (LIFE-8)
            local n = conv.negotiated
            if n and n.refused and n.refused.lz4 and dir.format == "uncompressed" and len >= M.HEADER_SIZE.lz4
                    and M.frame_header(s, pos, "lz4").crc24_ok then
                sender = "LIFE-8"
                text = text .. "; it verifies as an LZ4 header"
            end
            framing_error(dir, rec, "crc24_bad", "RECV-1", text, sender)
            if unframed then
                -- a note on this RECV-1 (why the header fails), not a finding after it
                finding(dir, rec.findings, "unframed_after_switch", "LIFE-7", string.format("looks like an unframed %s envelope after the switch", M.OPCODES[byte(s, pos + 4)] or "?")).past = nil
            end
            dir.mode = "stopped"
            dir.stop_reason = "RECV-1"
        elseif kind == "badenvelope" and dir.mode ~= "stopped" then
            if dir.mode == "await" then
                framing_error(dir, rec, "before_response", "LIFE-6", "sent after STARTUP before its response")
            elseif not unframed_version_ok(dir, s, pos) then
                not_envelope(dir, rec, string.format("version byte 0x%02x starts no envelope", byte(s, pos)))
            else
                check_length(dir, rec, M.unframed_envelope_header(s, pos), opts)
            end
            dir.mode = "stopped"
        elseif dir.stop_reason == "LIFE-1" and dir.offset == 0 then
            not_envelope(dir, rec, "the connection does not start with an envelope")
        elseif dir.stop_reason == "orphaned" then
            rec.orphaned = true
        else
            rec.unsynchronised = dir.first_error == nil
        end
        dir.offset = dir.offset + len
        return rec
    end
    if dir.mode == "framed" then
        rec.kind = "frame"
        rec.format, rec.checksum = dir.format, dir.checksum
        rec.detected = dir.detected
        local h = M.frame_header(s, pos, dir.format)
        rec.header = h
        if dir.at_start and dir.offset == 0 and conv.negotiated == nil then
            not_envelope(dir, rec, "the connection starts with a frame, not an unframed envelope")
        end
        local p0 = pos + h.size
        local tp = p0 + h.length
        rec.trailer = uint_le(s, tp, 4)
        if opts.verify then
            rec.computed = crc.payload(dir.checksum, s, p0, tp - 1)
            rec.checksum_ok = rec.computed == rec.trailer
            if not rec.checksum_ok then
                local hint = ""
                local alt = dir.checksum == "crc32c" and "crc32" or "crc32c"
                if crc.payload(alt, s, p0, tp - 1) == rec.trailer then
                    hint = " (the trailer is a valid " .. alt .. ")"
                    rec.trailer_is = alt
                elseif crc.crc32_unseeded(s, p0, tp - 1) == rec.trailer then
                    hint = " (the trailer is an unseeded CRC-32: the FA 2D 55 CA seed is missing)"
                    rec.trailer_is = "crc32-unseeded"
                end
                framing_error(dir, rec, "checksum_bad", "RECV-2", string.format("payload %s %08x, computed %08x%s", dir.checksum, rec.trailer, rec.computed, hint),
                    dir.checksum == "crc32" and "CRC-2" or "CRC-3")
            end
        end
        local content
        if dir.format == "lz4" and h.uncompressed_length > 0 then
            local kind2, reason
            content, kind2, reason = lz4.decompress(s, p0, h.length, h.uncompressed_length)
            if content == nil and kind2 == "lz4_end_of_block" then
                -- LZ4's end-of-block rules: the receiver's LZ4-6, the sender's LZ4-5
                framing_error(dir, rec, kind2, "LZ4-6", reason, "LZ4-5")
                rec.lz4_error = reason
            elseif content == nil then
                -- a malformed block breaks the sender's LZ4-1; the receiver fails it under LZ4-4
                framing_error(dir, rec, kind2, "LZ4-4", reason, "LZ4-1")
                rec.lz4_error = reason
            end
            rec.decompressed = true
        else
            content = sub(s, p0, tp - 1)
        end
        rec.content = content
        -- sender rules that receivers do not enforce, checked on a frame that passed the
        -- receiver's checks above and before the envelopes are assembled, as the judge does
        if h.reserved ~= 0 then
            finding(dir, rec.findings, "reserved", dir.format == "lz4" and "FMT-10" or "FMT-6", string.format("reserved bits 0x%x set: senders write zero (receivers ignore them, FMT-12)", h.reserved))
        end
        if dir.format == "lz4" and h.uncompressed_length > 0 and h.length >= h.uncompressed_length then
            finding(dir, rec.findings, "lz4_no_gain", "LZ4-3", string.format("payload compressed to %d bytes from %d: a recommendation, store it (LZ4-2)", h.length, h.uncompressed_length))
        end
        if content and not h.self_contained and dir.seq == nil and #content < 9 then
            finding(dir, rec.findings, "header_split", "SEND-8", string.format("first frame of a sequence carries %d bytes of the 9-byte envelope header (receivers accept it, RECV-6)", #content))
        end
        if content then
            if h.self_contained then
                if dir.seq then
                    framing_error(dir, rec, "interrupted", "RECV-8", string.format("self-contained frame inside an incomplete sequence (%d of %s bytes)", dir.seq.have, tostring(dir.seq.need or "?")), "SEND-5")
                    rec.dropped_sequence = dir.seq
                    dir.seq = nil
                end
                split_envelopes(dir, rec, content, opts)
                for _, env in ipairs(rec.envelopes) do envelope_checks(conv, dir, env, true) end
            else
                sequence_frame(conv, dir, rec, content, ctx, opts)
            end
        end
        dir.offset = dir.offset + len
        return rec
    end
    -- an unframed envelope
    rec.kind = "envelope"
    local env = M.unframed_envelope_header(s, pos)
    env.start = pos
    env.size = len
    rec.envelopes[1] = env
    if dir.mode == "await" then
        framing_error(dir, rec, "before_response", "LIFE-6", "sent after STARTUP before its response")
        dir.mode = "stopped"
        dir.stop_reason = "LIFE-6"
    elseif probe(env) then
        -- refused by the server without being processed; its refusal answers it (LIFE-14)
        if dir.role == nil then dir.role = "client" end
        await_answer(conv, env)
    elseif not envelope_checks(conv, dir, env, false) then
        if dir.role == nil then dir.role = env.response and "server" or "client" end
        handshake(conv, dir, env, s, pos, rec, ctx)
    else
        -- an envelope the receiver refuses (ENV-2, ENV-5) takes no part in the handshake, but
        -- the server's ERROR answers it
        await_answer(conv, env)
    end
    dir.offset = dir.offset + len
    return rec
end

-- `dir` hit a framing error before the switch. If it is the server's, the client's direction
-- never learns where it switches (from the STARTUP response): as the kit's judge does, it is
-- decoded through its STARTUP and no further, instead of taking its framed bytes for bytes sent
-- before that response (LIFE-6). The server's direction goes on after the client's stopped.
local function orphan(conv, dir)
    local o = other(conv, dir)
    if dir.role ~= "server" or o == nil or o.mode == "stopped" or o.mode == "framed"
        or not pairing(conv) then
        return
    end
    if o.mode == "await" then
        o.mode, o.stop_reason = "stopped", "orphaned"
    else
        o.orphaned = true
    end
end

--- Decodes the unit of `len` bytes at s[pos..] (as found by pdu()) and advances the state.
--- ctx = { number = packet number }; opts = { verify = bool, max_body = n }.
function M.process(conv, dir, s, pos, len, kind, ctx, opts)
    local errors = dir.errors
    local rec = process_unit(conv, dir, s, pos, len, kind, ctx, opts)
    if dir.errors > errors then orphan(conv, dir) end
    return rec
end

--- A copy of the state that process() may change, so that a packet can be decoded again
--- (Wireshark revisits packets) from exactly the state it was first decoded in.
function M.snapshot(conv)
    local c = { startup = conv.startup, asked = conv.asked, supported = conv.supported, negotiated = conv.negotiated, legacy = conv.legacy, refused = conv.refused, outstanding = conv.outstanding, dirs = {} }
    for k, d in pairs(conv.dirs) do
        local nd = {}
        for f, v in pairs(d) do nd[f] = v end
        if d.seq then
            local q = {}
            for f, v in pairs(d.seq) do q[f] = v end
            q.parts = copy(d.seq.parts)
            q.frames = copy(d.seq.frames)
            nd.seq = q
        end
        c.dirs[k] = nd
    end
    return c
end

return M
