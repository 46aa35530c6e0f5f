-- cqlframe/capture.lua: what only a capture has, as `cqlframe check` reads it
-- (reference/harness/src/pcap/tcp.rs, reference/harness/src/check/analyzer.rs): each direction
-- of a TCP connection reassembled from the packets in capture order (retransmitted bytes
-- trimmed, segments that arrive early held until the hole before them fills, a hole that never
-- fills or a snap length cut reported as a gap), connections joined midway, and the search for
-- the next frame after a gap. No Wireshark API: the dissector feeds it packets, the tests too.
--
-- The dissector does its own reassembly because Wireshark's does not hand every byte on: with
-- its defaults (tcp.reassemble_out_of_order FALSE, tcp.no_subdissector_on_error TRUE) a segment
-- that arrives out of order never reaches a dissector, and the bytes after it look lost.
--
-- What a capture cannot show is said as such, in the words of check's notes ("N bytes at byte
-- X are missing from the capture; ..."), never as a rule broken.

local framing = require("cqlframe.framing")
local crc = require("cqlframe.crc")

local byte, sub = string.byte, string.sub

local M = {}

local TWO32 = 4294967296
--- Most bytes held for segments that arrived ahead of a hole; past it, the hole is a gap.
M.OUT_OF_ORDER_LIMIT = 16 * 1048576
--- Bytes searched for a first frame before a joined direction is given up.
M.SYNC_LIMIT = 16 * 1048576
local MAX_FRAME = 8 + framing.MAX_PAYLOAD + 4

M.DIRECTIONS = { "client-to-server", "server-to-client" }

---------------------------------------------------------------------------------------------
-- TCP reassembly of one direction (tcp.rs). Deliveries: { kind = "data", offset, bytes,
-- packet }, { kind = "gap", offset, missing, packet }, { kind = "end", offset, reset }.
---------------------------------------------------------------------------------------------
function M.new_stream()
    return { started = false, from_start = false, next_seq = 0, offset = 0, early = {},
             early_bytes = 0, fin_at = nil, ended = false, retransmitted = 0, lost = 0 }
end

local function advance(st, n)
    st.offset = st.offset + n
    st.next_seq = (st.next_seq + n) % TWO32
end

local function deliver(st, bytes, packet, out)
    out({ kind = "data", offset = st.offset, bytes = bytes, packet = packet })
    advance(st, #bytes)
end

local function gap(st, missing, packet, out)
    out({ kind = "gap", offset = st.offset, missing = missing, packet = packet })
    st.lost = st.lost + missing
    advance(st, missing)
end

local function first_early(st)
    local at = nil
    for k in pairs(st.early) do
        if at == nil or k < at then at = k end
    end
    return at
end

-- Delivers the early segments that the stream has reached.
local function drain(st, out)
    while true do
        local at = first_early(st)
        if at == nil or at > st.offset then return end
        local e = st.early[at]
        st.early[at] = nil
        st.early_bytes = st.early_bytes - #e.bytes
        local stop = at + #e.bytes
        if stop > st.offset then
            local from = st.offset - at
            st.retransmitted = st.retransmitted + from
            deliver(st, sub(e.bytes, from + 1), e.packet, out)
        else
            st.retransmitted = st.retransmitted + #e.bytes
        end
    end
end

-- Gives up on the hole before the first early segment.
local function skip_hole(st, out)
    local at = first_early(st)
    if at == nil then return end
    if at > st.offset then gap(st, at - st.offset, st.early[at].packet, out) end
    drain(st, out)
end

local function check_fin(st, out)
    if st.fin_at and st.offset >= st.fin_at and not st.ended then
        st.ended = true
        out({ kind = "end", offset = st.offset, reset = false })
    end
end

--- One segment of this direction: seg = { seq (32-bit), syn, fin, rst, payload, missing }.
function M.segment(st, seg, packet, out)
    if st.ended then return end
    if seg.syn and not st.from_start then
        st.started, st.from_start = true, true
        st.next_seq = (seg.seq + 1) % TWO32
        st.offset = 0
    end
    local data_seq = (seg.seq + (seg.syn and 1 or 0)) % TWO32
    if not st.started then
        -- a bare ACK tells nothing about where this direction's stream is
        if #seg.payload == 0 and seg.missing == 0 and not seg.fin and not seg.rst then return end
        st.started = true
        st.next_seq = data_seq
        st.offset = 0
    end
    local rel = (data_seq - st.next_seq) % TWO32
    if rel >= 2147483648 then rel = rel - TWO32 end
    local at = st.offset + rel
    local len = #seg.payload + seg.missing
    if seg.rst then
        st.early, st.early_bytes = {}, 0
        st.ended = true
        out({ kind = "end", offset = st.offset, reset = true })
        return
    end
    if len > 0 then
        if at + len <= st.offset then
            st.retransmitted = st.retransmitted + len
        elseif at <= st.offset then
            local skip = st.offset - at
            st.retransmitted = st.retransmitted + skip
            if skip < #seg.payload then deliver(st, sub(seg.payload, skip + 1), packet, out) end
            local missing_from = math.max(skip, #seg.payload) - #seg.payload
            if seg.missing > missing_from then gap(st, seg.missing - missing_from, packet, out) end
            drain(st, out)
        else
            if #seg.payload > 0 then
                local old = st.early[at]
                if old == nil or #old.bytes < #seg.payload then
                    st.early_bytes = st.early_bytes + #seg.payload - (old and #old.bytes or 0)
                    st.early[at] = { bytes = seg.payload, packet = packet }
                end
            end
            if st.early_bytes > M.OUT_OF_ORDER_LIMIT then skip_hole(st, out) end
        end
    end
    if seg.fin then st.fin_at = math.max(at + len, 0) end
    check_fin(st, out)
end

--- The end of the capture: what waits behind a hole is delivered after a gap.
function M.flush(st, out)
    while first_early(st) ~= nil do skip_hole(st, out) end
    check_fin(st, out)
end

--- Bytes held behind a hole (shown as such until the hole fills or the capture ends).
function M.held(st)
    return st.early_bytes
end

---------------------------------------------------------------------------------------------
-- Searching a direction for its first frame (joined midway, or after a gap): a frame whose
-- CRC24 and payload checksum verify, in either format unless the format is known; then frame by
-- frame to the next self-contained one, where judging starts (analyzer.rs, step).
---------------------------------------------------------------------------------------------
local function new_sync(base, known)
    return { from = base, buf = "", pieces = {}, have = 0, need = 0, base = base, scan = 0, known = known ~= nil,
             format = known and known.format, checksum = known and known.checksum,
             version = known and known.version, walking = false }
end

-- A verified frame at index `at` (0-based) of buf: true, its header; false: none there; nil
-- and the length buf needs to tell.
local function frame_at(s, at, format, want)
    local buf = s.buf
    local hl = framing.HEADER_SIZE[format]
    if #buf < at + hl then return nil, at + hl end
    local h = framing.frame_header(buf, at + 1, format)
    if not h.crc24_ok then return false end
    local checksum = h.checksum_bit and "crc32c" or "crc32"
    if want and (want.format ~= format or want.checksum ~= checksum) then return false end
    if format == "lz4" and h.uncompressed_length > framing.MAX_PAYLOAD then return false end
    if #buf < at + h.total then return nil, at + h.total end
    local p0 = at + 1 + h.size
    local trailer = framing.uint_le(buf, p0 + h.length, 4)
    if crc.payload(checksum, buf, p0, p0 + h.length - 1) ~= trailer then return false end
    return true, h, checksum
end

-- The protocol version of the first envelope of a self-contained, uncompressed or stored frame.
local function first_version(buf, at, h)
    local content = at + 1 + h.size
    local stored = h.format == "uncompressed" or h.uncompressed_length == 0
    if not stored or h.length < 9 then return nil end
    local v = byte(buf, content) % 128
    if v == 5 or v == 6 then return v end
    return nil
end

-- Returns the index where decoding starts, or nil when more bytes are needed (s.need: the
-- length buf needs before the search can go on).
local function step(s)
    s.need = 0
    if s.walking then
        local want = { format = s.format, checksum = s.checksum }
        while true do
            local ok, h = frame_at(s, s.scan, s.format, want)
            if ok == nil then s.need = h; return nil end
            if ok == false then
                -- the chain broke: search again from the next byte
                s.walking = false
                if not s.known then s.format, s.checksum = nil, nil end
                s.scan = s.scan + 1
                break
            end
            if h.self_contained then
                if s.version == nil then s.version = first_version(s.buf, s.scan, h) end
                return s.scan
            end
            s.scan = s.scan + h.total
        end
    end
    local formats = s.known and { s.format } or { "uncompressed", "lz4" }
    local want = s.known and { format = s.format, checksum = s.checksum } or nil
    while s.scan + 6 <= #s.buf do
        local wait = false
        for _, format in ipairs(formats) do
            local ok, h, checksum = frame_at(s, s.scan, format, want)
            if ok == nil then
                s.need = (wait and math.min(s.need, h)) or h
                wait = true
            elseif ok then
                s.format, s.checksum = format, checksum
                s.walking = true
                return step(s)
            end
        end
        if wait then return nil end
        s.scan = s.scan + 1
    end
    s.need = s.scan + 6
    return nil
end

---------------------------------------------------------------------------------------------
-- A connection: its two directions reassembled and judged by framing.lua, as check's analyzer
-- does. conn.out(packet, item) receives, in order, what each packet completed: { unit = rec,
-- bytes, offset, dir } for a unit framing.process decoded, { note = key, text, dir } for what
-- the capture cannot show.
---------------------------------------------------------------------------------------------

--- A new connection. `from_start`: the capture holds its SYN. keys: the client's and the
--- server's endpoint names (framing's direction keys).
function M.new_connection(from_start, keys, opts, out)
    local c = { conv = framing.new_conversation(), tcp = { M.new_stream(), M.new_stream() },
                syncs = {}, decided = false, seen = { false, false }, keys = keys, opts = opts,
                out = out, pieces = { {}, {} }, have = { 0, 0 }, need = { 0, 0 },
                notes = {}, deliveries = 0, last = {}, orphan_stopped = {} }
    for i, role in ipairs({ "client", "server" }) do
        framing.direction(c.conv, keys[i], role)
    end
    if from_start then M.start_paired(c) end
    return c
end

function M.start_paired(c)
    c.decided = true
    c.handshake = "seen"
    for i = 1, 2 do c.conv.dirs[c.keys[i]].at_start = true end
end

-- `state`: the stream state a packet with nothing but this note shows (default: a gap).
local function note(c, d, packet, key, text, state)
    c.notes[#c.notes + 1] = text
    c.out(packet, { note = key, text = text, dir = d, state = state })
end

local function start_joined(c, packet)
    c.decided = true
    c.handshake = "joined"
    note(c, 1, packet, "joined", "joined midway: no handshake in the capture; each direction is decoded from a self-contained frame whose checksums verify")
    c.syncs = { new_sync(0, nil), new_sync(0, nil) }
    for i = 1, 2 do
        local dir = c.conv.dirs[c.keys[i]]
        dir.mode, dir.stop_reason = "stopped", "capture"
    end
end

-- A connection without a SYN: paired if its first bytes are a client's OPTIONS or STARTUP
-- before the server said anything, joined otherwise.
local function decide(c, d, bytes, packet)
    local v, op = byte(bytes, 1), byte(bytes, 5)
    if d == 1 and not c.seen[2] and #bytes >= 5 and v >= 3 and v <= 6 and (op == 0x05 or op == 0x01) then
        M.start_paired(c)
    else
        start_joined(c, packet)
    end
end

local function settings_name(version, format, checksum)
    local s = format .. " " .. checksum
    if version then s = "v" .. version .. " " .. s end
    return s
end

-- Decodes what direction d has buffered, unit by unit, as far as framing.pdu allows. Bytes
-- come in pieces, joined only once framing.pdu's unit can be complete (a large frame in small
-- segments would be copied once per segment otherwise).
local function judge(c, d, packet, bytes)
    local p = c.pieces[d]
    p[#p + 1] = bytes
    c.have[d] = c.have[d] + #bytes
    if c.have[d] < c.need[d] then return end
    local buf = table.concat(p)
    c.need[d] = 0
    local dir = c.conv.dirs[c.keys[d]]
    if dir.mode == "stopped" and dir.stop_reason == "capture" then
        -- not judged after what the capture lost (check's judge stops the direction): shown
        -- undecoded, with no finding and no note of its own
        c.pieces[d], c.have[d] = {}, 0
        c.out(packet, { unit = { kind = "undecoded", offset = dir.offset, length = #buf, findings = {}, envelopes = {} },
                        bytes = buf, offset = dir.offset, dir = d, state = "stopped", role = dir.role })
        dir.offset = dir.offset + #buf
        return
    end
    local pos = 1
    while pos <= #buf do
        local size, kind, more = framing.pdu(c.conv, dir, buf, pos, #buf - pos + 1, c.opts)
        if size == nil then
            c.need[d] = #buf - pos + 1 + (more or 1)
            break
        end
        local offset = dir.offset
        -- a format detected from a verified CRC24 at the connection's start (LIFE-3, LIFE-4)
        if dir.mode == "framed" and dir.detected and dir.switch_offset_detected == nil then
            dir.switch_offset_detected = offset
        end
        local rec = framing.process(c.conv, dir, buf, pos, size, kind, { number = packet, delivery = c.deliveries }, c.opts)
        if dir.detected and dir.switch_offset_detected == offset then rec.first_detected = true end
        c.out(packet, { unit = rec, bytes = sub(buf, pos, pos + size - 1), offset = offset, dir = d,
                        state = dir.mode == "framed" and ("framed " .. dir.format .. "/" .. dir.checksum) or dir.mode,
                        role = dir.role })
        -- what the handshake leaves undecided, said where the judge decides it cannot judge
        if rec.unjudged then note(c, d, packet, "unjudged", rec.unjudged) end
        pos = pos + size
    end
    c.pieces[d] = { sub(buf, pos) }
    c.have[d] = #buf - pos + 1
end

local function clear(c, d)
    c.pieces[d], c.have[d], c.need[d] = {}, 0, 0
end

-- Direction d resumes at stream offset `offset`, a self-contained frame, with these settings.
local function resume(c, d, s, at, packet)
    local offset = s.base + at
    local rest = sub(s.buf, at + 1)
    c.syncs[d] = nil
    local name = settings_name(s.version, s.format, s.checksum)
    note(c, d, packet, "resynchronised", string.format("%s: decoding from byte %d (%s)", M.DIRECTIONS[d], offset, name))
    local dir = c.conv.dirs[c.keys[d]]
    dir.mode, dir.format, dir.checksum = "framed", s.format, s.checksum
    dir.detected = true
    dir.switch_offset, dir.switch_offset_detected = offset, offset
    dir.offset = offset
    dir.protocol = s.version
    dir.seq, dir.first_error, dir.stop_reason = nil, nil, nil
    clear(c, d)
    judge(c, d, packet, rest)
end

local function sync(c, d, bytes, packet)
    local s = c.syncs[d]
    s.pieces[#s.pieces + 1] = bytes
    s.have = s.have + #bytes
    if s.have < s.need then return end
    s.buf = table.concat(s.pieces)
    s.pieces = { s.buf }
    local at = step(s)
    if at then return resume(c, d, s, at, packet) end
    if s.scan > 2 * MAX_FRAME and not s.walking then
        s.buf = sub(s.buf, s.scan + 1)
        s.pieces, s.have = { s.buf }, #s.buf
        s.need = math.max(s.need - s.scan, 0)
        s.base = s.base + s.scan
        s.scan = 0
    end
    if s.base + s.scan > M.SYNC_LIMIT and not s.walking then
        note(c, d, packet, "no_frame", string.format("%s: no verifiable frame in the first %d MiB: not checked", M.DIRECTIONS[d], M.SYNC_LIMIT / 1048576))
        c.syncs[d] = nil
    end
end

-- The first bytes of a direction seen from its start that are a frame, not an envelope: a
-- receiver fails them at their first byte (LIFE-3, LIFE-4), while the dissector waits for the
-- whole frame to show it. When the frame cannot come whole (a gap, the end), they are judged as
-- they are.
--
-- Likewise bytes a client sent after its STARTUP: a receiver fails them at their first byte
-- (LIFE-6), while the dissector waits for a whole envelope; they are judged as they are before
-- the server's next bytes are (`early`), which may end the wait. And at the end, a failing
-- header held for the bytes that would tell an LZ4 one (RECV-1).
local function settle(c, d, packet, early)
    local dir = c.conv.dirs[c.keys[d]]
    if c.have[d] == 0 then return end
    local first_frame = dir.at_start and dir.offset == 0 and dir.mode == "framed" and dir.detected
        and c.conv.negotiated == nil
    -- an uncompressed header that fails its CRC24, held for 8 bytes (framing.pdu) that never came
    local held = not first_frame and not early and dir.mode == "framed" and dir.format == "uncompressed"
        and c.have[d] >= framing.HEADER_SIZE.uncompressed and c.have[d] < framing.HEADER_SIZE.lz4
        and not framing.frame_header(table.concat(c.pieces[d]), 1, "uncompressed").crc24_ok
    if not (dir.mode == "await" or (first_frame and not early) or held) then return end
    local buf = table.concat(c.pieces[d])
    clear(c, d)
    local offset = dir.offset
    local rec = framing.process(c.conv, dir, buf, 1, #buf, held and "badheader" or "badenvelope", { number = packet, delivery = c.deliveries }, c.opts)
    c.out(packet, { unit = rec, bytes = buf, offset = held and offset or 0, dir = d, state = dir.mode, role = dir.role })
end

local function on_gap(c, d, offset, missing, packet)
    settle(c, d, packet)
    local text = string.format("%s: %d bytes at byte %d are missing from the capture", M.DIRECTIONS[d], missing, offset)
    local dir = c.conv.dirs[c.keys[d]]
    local s = c.syncs[d]
    local known
    if s then
        if s.known then known = { format = s.format, checksum = s.checksum, version = s.version } end
    elseif dir.stop_reason == "orphaned" and not (c.orphan_stopped[d] or dir.own_bytes_stopped) then
        -- orphaned (the server stopped before its STARTUP response) but not yet stopped by
        -- bytes of its own, as check's judge has it: still before the switch
        note(c, d, packet, "capture_gap", text .. "; before the switch: not checked further")
        dir.mode, dir.stop_reason = "stopped", "capture"
        clear(c, d)
        dir.offset = offset + missing
        return
    elseif dir.mode == "stopped" or dir.first_error then
        -- judging stopped at a framing error (RECV-11): nothing more to say, and the bytes after
        -- the gap are not decoded as if they followed on
        dir.mode, dir.stop_reason = "stopped", "capture"
        clear(c, d)
        dir.offset = offset + missing
        return
    elseif dir.mode == "framed" then
        known = { format = dir.format, checksum = dir.checksum,
                  version = (c.conv.negotiated and c.conv.negotiated.protocol) or dir.protocol }
    else
        note(c, d, packet, "capture_gap", text .. "; before the switch: not checked further")
        dir.mode, dir.stop_reason = "stopped", "capture"
        clear(c, d)
        dir.offset = offset + missing
        return
    end
    note(c, d, packet, "capture_gap", text .. "; looking for the next frame")
    -- what was decoded before the gap is abandoned: judging resumes at the next frame
    dir.mode, dir.stop_reason = "stopped", "capture"
    clear(c, d)
    c.syncs[d] = new_sync(offset + missing, known)
end

-- One delivery of TCP reassembly for direction d; `packet` is the packet being read (0 at the
-- end of the capture: then the packet that carried the bytes).
local function delivery(c, d, x, packet)
    if x.kind == "data" then
        if packet == 0 then packet = x.packet end
        c.deliveries = c.deliveries + 1
        c.last[d] = packet
        local dir = c.conv.dirs[c.keys[d]]
        -- check's judge stops an orphaned client at its first bytes after the orphaning
        if dir.stop_reason == "orphaned" then c.orphan_stopped[d] = true end
        settle(c, 3 - d, c.last[3 - d] or packet, true)
        if c.on_data then c.on_data(d, x) end
        if not c.decided then decide(c, d, x.bytes, packet) end
        c.seen[d] = true
        if c.syncs[d] then
            sync(c, d, x.bytes, packet)
        else
            judge(c, d, packet, x.bytes)
        end
    elseif x.kind == "gap" then
        on_gap(c, d, x.offset, x.missing, packet ~= 0 and packet or x.packet)
    end
end

--- One TCP segment of direction d (1: client to server) in packet `packet`.
function M.segment_of(c, d, seg, packet)
    M.segment(c.tcp[d], seg, packet, function(x) delivery(c, d, x, packet) end)
    if seg.rst then
        local o = 3 - d
        if not c.tcp[o].ended then c.tcp[o].ended = true end
    end
end

--- Both directions ended (FIN or RST): nothing more will come.
function M.ended(c)
    return c.tcp[1].ended and c.tcp[2].ended
end

--- The end of the connection or of the capture: what waits behind a hole, after a gap. The
--- notes of the end go to `packet`, the one that ended the connection (so that a one-pass read
--- shows them), or at the end of the capture to the last packet of their direction.
function M.close(c, packet)
    if c.closed then return end
    c.closed = true
    for d = 1, 2 do
        M.flush(c.tcp[d], function(x) delivery(c, d, x, 0) end)
        settle(c, d, c.last[d] or 0)
    end
    -- bytes searched for a frame in vain (a join or a gap that never found its way back) are
    -- said not to be checked, so that they never read as clean
    for d = 1, 2 do
        local s = c.syncs[d]
        local searched = s and (s.base + s.have - s.from) or 0
        if searched > 0 then
            note(c, d, packet or c.last[d] or 0, "no_frame", string.format("%s: no self-contained frame whose checksums verify in the %d bytes from byte %d: not checked", M.DIRECTIONS[d], searched, s.from), "end")
        end
    end
    -- and so is a STARTUP that could switch the connection and was never answered (JUDGE-11)
    local unanswered = framing.unanswered_startup(c.conv)
    if unanswered then note(c, 1, packet or c.last[1] or 0, "unjudged", unanswered, "end") end
end

return M
