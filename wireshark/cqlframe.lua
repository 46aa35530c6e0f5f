-- cqlframe.lua: Wireshark dissector for the frame layer of the CQL native protocol, v5 and
-- later (spec/framing_v6.adoc): the unframed handshake, the switch to frames, uncompressed and
-- LZ4 frames, CRC24 / CRC32 / CRC32C checks, sequences of non-self-contained frames, envelopes.
--
-- Install: copy this file and the folder cqlframe/ next to it into the personal Lua plugins
-- folder (~/.local/lib/wireshark/plugins). Or run: tshark -X lua_script:/path/to/cqlframe.lua
--
-- Works unchanged on Wireshark 4.0 / 4.2 (Lua 5.2) and 4.4+ (Lua 5.4): no native bit operators
-- (cqlframe/bit.lua), modules found through package.path from this file's own folder.

-- Modules: cqlframe/*.lua beside this file. The folder of this script is prepended to
-- package.path so that require("cqlframe.x") finds them wherever the plugin is installed.
local function script_dir()
    local src = debug.getinfo(1, "S").source
    if src:sub(1, 1) == "@" then
        local dir = src:sub(2):match("^(.*)[/\\][^/\\]*$")
        return dir or "."
    end
    return "."
end
local here = script_dir()
if not package.path:find(here .. "/?.lua", 1, true) then
    package.path = here .. "/?.lua;" .. package.path
end

local framing = require("cqlframe.framing")
local capture = require("cqlframe.capture")
local cql = require("cqlframe.cql")

local VERSION = "0.1.0"
if set_plugin_info then
    set_plugin_info({
        version = VERSION,
        description = "CQL native protocol v5+ framing (CRC24, CRC32/CRC32C, LZ4, sequences)",
        repository = "cqlframe reference kit, wireshark/",
    })
end

local proto = Proto("cqlframe", "CQL Native Protocol Framing")

---------------------------------------------------------------------------------------------
-- Fields
---------------------------------------------------------------------------------------------
local STATUS = { [0] = "Bad", [1] = "Good", [2] = "Unverified" }
local pf = {}
pf.direction = ProtoField.string("cqlframe.direction", "Direction")
pf.mode = ProtoField.string("cqlframe.mode", "Stream state")
pf.stream_offset = ProtoField.uint32("cqlframe.stream_offset", "Stream offset")
pf.negotiated_format = ProtoField.string("cqlframe.negotiated.format", "Negotiated frame format")
pf.negotiated_checksum = ProtoField.string("cqlframe.negotiated.checksum", "Negotiated payload checksum")
pf.undecoded = ProtoField.bytes("cqlframe.undecoded", "Undecoded data")

pf.frame = ProtoField.none("cqlframe.frame", "Frame")
pf.frame_format = ProtoField.string("cqlframe.frame.format", "Format")
pf.frame_header = ProtoField.uint64("cqlframe.frame.header", "Header word", base.HEX)
pf.frame_length = ProtoField.uint32("cqlframe.frame.length", "Payload length")
pf.frame_ulength = ProtoField.uint32("cqlframe.frame.uncompressed_length", "Uncompressed length")
pf.frame_sc = ProtoField.bool("cqlframe.frame.self_contained", "Self-contained")
pf.frame_cbit = ProtoField.bool("cqlframe.frame.checksum_bit", "Checksum bit (CRC32C)")
pf.frame_reserved = ProtoField.uint8("cqlframe.frame.reserved", "Reserved bits", base.HEX)
pf.crc24 = ProtoField.uint24("cqlframe.frame.crc24", "Header CRC24", base.HEX)
pf.crc24_computed = ProtoField.uint24("cqlframe.frame.crc24.computed", "Computed CRC24", base.HEX)
pf.crc24_status = ProtoField.uint8("cqlframe.frame.crc24.status", "CRC24 status", base.DEC, STATUS)
pf.payload = ProtoField.bytes("cqlframe.frame.payload", "Payload")
pf.checksum = ProtoField.uint32("cqlframe.frame.checksum", "Payload checksum", base.HEX)
pf.checksum_algorithm = ProtoField.string("cqlframe.frame.checksum.algorithm", "Payload checksum algorithm")
pf.checksum_computed = ProtoField.uint32("cqlframe.frame.checksum.computed", "Computed payload checksum", base.HEX)
pf.checksum_status = ProtoField.uint8("cqlframe.frame.checksum.status", "Payload checksum status", base.DEC, STATUS)
pf.content_length = ProtoField.uint32("cqlframe.frame.content_length", "Content length")
pf.seq_index = ProtoField.uint32("cqlframe.frame.sequence.index", "Frame of sequence")
pf.seq_have = ProtoField.uint32("cqlframe.frame.sequence.have", "Sequence bytes so far")
pf.seq_need = ProtoField.uint32("cqlframe.frame.sequence.need", "Sequence envelope size")

pf.envelope = ProtoField.none("cqlframe.envelope", "Envelope")
pf.env_framed = ProtoField.bool("cqlframe.envelope.framed", "Framed")
pf.env_reassembled = ProtoField.bool("cqlframe.envelope.reassembled", "Reassembled from a sequence")
pf.env_frame_count = ProtoField.uint32("cqlframe.envelope.frame_count", "Frames in sequence")
pf.env_fragment = ProtoField.framenum("cqlframe.envelope.fragment", "Sequence frame in packet")
pf.env_summary = ProtoField.string("cqlframe.envelope.summary", "Summary")
pf.version = ProtoField.uint8("cqlframe.version", "Version", base.HEX)
pf.version_protocol = ProtoField.uint8("cqlframe.version.protocol", "Protocol version", base.DEC)
pf.version_response = ProtoField.bool("cqlframe.version.response", "Response")
pf.flags = ProtoField.uint8("cqlframe.flags", "Flags", base.HEX)
pf.flag_compression = ProtoField.bool("cqlframe.flags.compression", "Compression", 8, nil, 0x01)
pf.flag_tracing = ProtoField.bool("cqlframe.flags.tracing", "Tracing", 8, nil, 0x02)
pf.flag_custom = ProtoField.bool("cqlframe.flags.custom_payload", "Custom payload", 8, nil, 0x04)
pf.flag_warning = ProtoField.bool("cqlframe.flags.warning", "Warning", 8, nil, 0x08)
pf.flag_beta = ProtoField.bool("cqlframe.flags.use_beta", "Use beta", 8, nil, 0x10)
local FLAG_FIELDS = { pf.flag_compression, pf.flag_tracing, pf.flag_custom, pf.flag_warning, pf.flag_beta }
pf.stream = ProtoField.int16("cqlframe.stream", "Stream")
pf.opcode = ProtoField.uint8("cqlframe.opcode", "Opcode", base.HEX, framing.OPCODES)
pf.length = ProtoField.int32("cqlframe.length", "Body length")
pf.body = ProtoField.bytes("cqlframe.body", "Body")
cql.fields(pf)

local fields = {}
for _, f in pairs(pf) do fields[#fields + 1] = f end
proto.fields = fields

---------------------------------------------------------------------------------------------
-- Expert info: one entry per finding key of cqlframe/framing.lua and per note of
-- cqlframe/capture.lua. Severity says what `cqlframe check` reports: ERROR for a framing error,
-- WARN for another MUST broken, NOTE for a SHOULD (a recommendation) or a remark that names no
-- rule broken, CHAT for the course of decoding (the handshake, where decoding starts or goes
-- on). A finding the judge does not report is never an ERROR or a WARN. What the capture cannot
-- show (bytes missing from it, a connection joined midway) is a WARN of the group UNDECODED,
-- named as such ("capture_gap", "joined"), never a rule broken.
---------------------------------------------------------------------------------------------
local G, S = expert.group, expert.severity
local EXPERTS = {
    crc24_bad = { "Header CRC24 mismatch", G.CHECKSUM, S.ERROR },
    checksum_bad = { "Payload checksum mismatch", G.CHECKSUM, S.ERROR },
    checksum_bit = { "Checksum bit disagrees with the negotiated payload checksum", G.PROTOCOL, S.ERROR },
    reserved = { "Reserved header bits set", G.PROTOCOL, S.WARN },
    lz4_no_gain = { "LZ4 payload not shorter than its content", G.PROTOCOL, S.NOTE },
    lz4_malformed = { "Malformed LZ4 block", G.MALFORMED, S.ERROR },
    lz4_length_mismatch = { "LZ4 block length differs from the header", G.MALFORMED, S.ERROR },
    lz4_end_of_block = { "LZ4 block breaks the end-of-block rules", G.MALFORMED, S.ERROR },
    partial_envelope = { "Self-contained frame ends inside an envelope", G.MALFORMED, S.ERROR },
    negative_length = { "Negative envelope body length", G.MALFORMED, S.ERROR },
    too_large = { "Envelope body length above the limit", G.PROTOCOL, S.ERROR },
    interrupted = { "Sequence interrupted by a self-contained frame", G.SEQUENCE, S.ERROR },
    overshoot = { "Sequence overshoots its envelope", G.SEQUENCE, S.ERROR },
    empty_continuation = { "Non-self-contained frame with no content", G.SEQUENCE, S.ERROR },
    header_split = { "Envelope header split across frames", G.PROTOCOL, S.WARN },
    sequence_fill = { "Sequence frames not filled", G.SEQUENCE, S.NOTE },
    not_envelope = { "Connection does not start with an envelope", G.PROTOCOL, S.ERROR },
    before_response = { "Client sent data before the STARTUP response", G.SEQUENCE, S.ERROR },
    unpaired_response = { "Response that answers no outstanding request before the switch", G.SEQUENCE, S.ERROR },
    -- why a header fails its CRC24 (the RECV-1 beside it is the finding): a remark
    unframed_after_switch = { "Unframed envelope after the switch to framing", G.PROTOCOL, S.NOTE },
    neg_unlisted = { "FRAME_CHECKSUM not offered by the server", G.PROTOCOL, S.WARN },
    missed_refusal = { "STARTUP taken that the server must refuse", G.PROTOCOL, S.WARN },
    -- decoding goes on where a receiver has stopped (RECV-11): the course, no rule broken
    after_error = { "Decoded after a framing error", G.SEQUENCE, S.CHAT },
    unsynchronised = { "Not synchronised with the frame stream", G.UNDECODED, S.NOTE },
    no_frame = { "No frame to decode from: not checked", G.UNDECODED, S.WARN },
    -- what the handshake left undecided (JUDGE-11): said as such, never as a rule broken
    unjudged = { "Not judged: the handshake left it undecided", G.UNDECODED, S.WARN },
    capture_gap = { "Bytes missing from the capture", G.UNDECODED, S.WARN },
    capture_held = { "Bytes held behind a hole in the capture", G.UNDECODED, S.NOTE },
    joined = { "Capture joined the connection midway", G.UNDECODED, S.WARN },
    resynchronised = { "Decoding starts at a verified self-contained frame", G.SEQUENCE, S.CHAT },
    orphaned = { "Not decoded: the server's direction stopped before the switch", G.UNDECODED, S.NOTE },
    switch = { "Switch to framing", G.SEQUENCE, S.CHAT },
    -- a refused version (LIFE-11): the course of the handshake, no rule broken
    no_switch = { "No switch to framing", G.SEQUENCE, S.CHAT },
    detected = { "Frame format detected from a verified CRC24", G.SEQUENCE, S.CHAT },
    compression_flag = { "Envelope COMPRESSION flag on a framed connection", G.PROTOCOL, S.NOTE },
    use_beta = { "v6 envelope without USE_BETA", G.PROTOCOL, S.WARN },
    malformed_body = { "Malformed envelope body", G.MALFORMED, S.WARN },
    env_version = { "Envelope version byte unexpected", G.PROTOCOL, S.WARN },
}
local ef = {}
local experts = {}
for key, e in pairs(EXPERTS) do
    ef[key] = ProtoExpert.new("cqlframe.expert." .. key, e[1], e[2], e[3])
    experts[#experts + 1] = ef[key]
end
proto.experts = experts

---------------------------------------------------------------------------------------------
-- Preferences
---------------------------------------------------------------------------------------------
proto.prefs.port = Pref.uint("TCP port", 9042, "TCP port of the CQL server (0: none; Decode As and the heuristic still work)")
proto.prefs.verify = Pref.bool("Verify payload checksums", true,
    "Compute CRC32 / CRC32C over every payload (pure Lua, the main cost). The header CRC24 is always verified: it decides where frames start.")
proto.prefs.heuristic = Pref.bool("Detect on other ports", false,
    "Off by default, as cqlframe check reads only --port. Claim TCP connections on other ports whose first segment starts with a frame header whose CRC24 verifies, or with a v5/v6 OPTIONS or STARTUP")
-- 256 MiB, as `cqlframe check --max-body` (the reference's DEFAULT_MAX_ENVELOPE_BODY): the
-- largest body an Apache Cassandra node can be configured to take, so that no envelope a node
-- may accept is called too large; a node's own configured maximum is given here.
proto.prefs.max_body = Pref.uint("Envelope body limit", 268435456,
    "Flag envelopes whose body length exceeds this many bytes (RECV-12), as cqlframe check --max-body; 0: no limit")
proto.prefs.bodies = Pref.bool("Decode envelope bodies", true, "Show STARTUP/SUPPORTED maps, ERROR, QUERY, RESULT, ...")

---------------------------------------------------------------------------------------------
-- State. The postdissector reads every TCP packet of a CQL connection (with Wireshark's
-- defaults a segment that arrives out of order reaches no dissector) and reassembles each
-- direction itself, as `cqlframe check` does (cqlframe/capture.lua). Each packet is taken in
-- once, on the first pass that has its TCP fields; what it completed (decoded units, notes on
-- what the capture cannot show) is kept per packet and shown on every visit. At the end of
-- the first pass of a two-pass read (Wireshark, tshark -2) the bytes still held behind a hole
-- are judged after a gap, as check does at the end of a capture.
---------------------------------------------------------------------------------------------
local f_tcp_stream = Field.new("tcp.stream")
local f_tcp_seq = Field.new("tcp.seq_raw")
local f_tcp_len = Field.new("tcp.len")
local f_tcp_flags = Field.new("tcp.flags")
local f_tcp_payload = Field.new("tcp.payload")
local f_tcp_srcport = Field.new("tcp.srcport")
local f_tcp_dstport = Field.new("tcp.dstport")

-- connections: tcp.stream -> capture connection; order: the streams in the order created;
-- claimed: tcp.stream -> true for a stream taken by Decode As or the heuristic; items:
-- packet number -> what it completed; held: packet number -> bytes held behind a hole;
-- ingested: packet number -> true once taken in.
local connections, order, claimed, items, held, ingested = {}, {}, {}, {}, {}, {}
local finalised, first_pass_ingested = false, false

function proto.init()
    connections, order, claimed, items, held, ingested = {}, {}, {}, {}, {}, {}
    finalised, first_pass_ingested = false, false
end

local function field_value(f)
    if f == nil then return nil end
    local v = f()
    if v == nil then return nil end
    return v.value
end

local function opts()
    local limit = proto.prefs.max_body
    if limit == 0 then limit = 2147483647 end
    return { verify = proto.prefs.verify, max_body = limit }
end

---------------------------------------------------------------------------------------------
-- Rendering
---------------------------------------------------------------------------------------------
local function status_text(ok)
    if ok == nil then return "unverified" end
    return ok and "correct" or "INCORRECT"
end

-- Adds the expert info of each finding of rec to item; returns their rule IDs for the Info
-- column, space-separated ("" if none).
local function add_findings(item, rec)
    local rules = {}
    for _, f in ipairs(rec.findings) do
        item:add_proto_expert_info(ef[f.key], framing.describe(f))
        rules[#rules + 1] = f.rule
    end
    return table.concat(rules, " ")
end

-- One envelope at etvb[eoff, eoff+size); returns its Info summary.
local function add_envelope(tree, etvb, eoff, env, framed, ctx)
    local name = framing.OPCODES[env.opcode] or string.format("0x%02x", env.opcode)
    local t = tree:add(pf.envelope, etvb(eoff, env.size))
    t:set_text(string.format("Envelope: v%d %s, stream %d, %s, body %d bytes", env.protocol,
        env.response and "response" or "request", env.stream, name, env.length))
    t:add(pf.env_framed, framed):set_generated()
    local vr, fr = etvb(eoff, 1), etvb(eoff + 1, 1)
    local vt = t:add(pf.version, vr)
    vt:add(pf.version_protocol, vr, env.protocol)
    vt:add(pf.version_response, vr, env.response)
    local ft = t:add(pf.flags, fr)
    for _, f in ipairs(FLAG_FIELDS) do ft:add(f, fr) end
    -- the envelope's own findings (ENV-2, ENV-4, ENV-5), on the byte they are about
    for _, f in ipairs(env.findings or {}) do
        local item = f.at == "version" and vt or ft
        item:add_proto_expert_info(ef[f.key], framing.describe(f))
    end
    -- a retired version's 8-byte header has a one-byte stream (LIFE-14)
    local short = env.header_len == 8 and 1 or 0
    t:add(pf.stream, etvb(eoff + 2, 2 - short), env.stream)
    t:add(pf.opcode, etvb(eoff + 4 - short, 1))
    t:add(pf.length, etvb(eoff + 5 - short, 4))
    local summary = string.format("%s(%d)", name, env.stream)
    local body = eoff + env.header_len
    if env.length > 0 then
        local bt = t:add(pf.body, etvb(body, env.length))
        if proto.prefs.bodies then
            local ok, s = pcall(cql.body, env, etvb, body, bt, pf)
            if not ok then
                bt:add_proto_expert_info(ef.malformed_body, "malformed " .. name .. " body: " .. tostring(s))
            elseif s then
                summary = summary .. " " .. s
                t:append_text(": " .. s)
            end
        end
    end
    ctx.summaries[#ctx.summaries + 1] = summary
    return t
end

local function checksum_item(tree, field, range, value, computed, ok, fcomp, fstat)
    local it = tree:add(field, range, value)
    it:append_text(" [" .. status_text(ok) .. "]")
    if computed ~= nil then
        it:add(fcomp, range, computed):set_generated()
    end
    local st = ok == nil and 2 or (ok and 1 or 0)
    it:add(fstat, range, st):set_generated()
    return it
end

local function render_frame(root, tvb, off, rec, ctx)
    local h = rec.header
    local total = rec.truncated and (tvb:len() - off) or rec.length
    local t = root:add(pf.frame, tvb(off, total))
    local kind = h.self_contained and "self-contained" or "not self-contained"
    if rec.truncated then
        t:set_text(string.format("Frame at stream offset %d (%s): %s, %d bytes not decoded", rec.offset, rec.format, rec.truncated, total))
    else
        t:set_text(string.format("Frame at stream offset %d: %s, %s, payload %d bytes", rec.offset, rec.format, kind, h.length))
    end
    t:add(pf.stream_offset, tvb(off, h.size), rec.offset):set_generated()
    t:add(pf.frame_format, tvb(off, h.size), rec.format):set_generated()
    local fsize = h.size - 3   -- the header word, before its CRC24
    local wr = tvb(off, fsize)
    local hw = t:add(pf.frame_header, wr, wr:le_uint64())
    hw:add(pf.frame_length, wr, h.length):append_text(rec.format == "lz4" and " (compressed length, bits 0-16)" or " (bits 0-16)")
    if rec.format == "lz4" then
        hw:add(pf.frame_ulength, wr, h.uncompressed_length):append_text(h.uncompressed_length == 0 and " (stored, LZ4-2)" or " (bits 17-33)")
    end
    hw:add(pf.frame_sc, wr, h.self_contained)
    hw:add(pf.frame_cbit, wr, h.checksum_bit)
    hw:add(pf.frame_reserved, wr, h.reserved)
    checksum_item(t, pf.crc24, tvb(off + fsize, 3), h.crc24, h.crc24_computed, h.crc24_ok, pf.crc24_computed, pf.crc24_status)
    if rec.truncated then
        t:add(pf.undecoded, tvb(off + h.size, total - h.size))
        add_findings(t, rec)
        ctx.summaries[#ctx.summaries + 1] = rec.truncated == "checksum bit disagrees" and "[CHECKSUM BIT]" or "[CRC24 BAD]"
        return
    end
    local p0 = off + h.size
    t:add(pf.payload, tvb(p0, h.length))
    t:add(pf.checksum_algorithm, tvb(p0 + h.length, 4), rec.checksum):set_generated()
    checksum_item(t, pf.checksum, tvb(p0 + h.length, 4), rec.trailer, rec.computed, rec.checksum_ok, pf.checksum_computed, pf.checksum_status)
    if rec.after_error then
        t:add_proto_expert_info(ef.after_error, string.format("this direction had a framing error (%s) at stream offset %d: a receiver stops there (RECV-11)", rec.after_error.rule, rec.after_error.offset))
    end
    if rec.first_detected then
        t:add_proto_expert_info(ef.detected, string.format("no handshake seen: %s frames with %s, detected from a verified header CRC24", rec.format, rec.checksum))
    end
    local rules = add_findings(t, rec)
    if rec.content then
        t:add(pf.content_length, tvb(p0, h.length), #rec.content):set_generated()
    end
    -- the frame's content: the payload itself, or the decompressed block
    local ctvb, coff = tvb, p0
    if rec.decompressed and rec.content and #rec.content > 0 and (#rec.envelopes > 0 or rec.partial) then
        ctvb = ByteArray.new(rec.content, true):tvb("Decompressed frame content")
        coff = 0
    end
    if rec.sequence then
        local s = rec.sequence
        t:add(pf.seq_index, wr, s.index):set_generated()
        t:add(pf.seq_have, wr, s.have):set_generated()
        if s.need then t:add(pf.seq_need, wr, s.need):set_generated() end
        if not s.complete then
            ctx.summaries[#ctx.summaries + 1] = string.format("[sequence frame %d, %d/%s bytes]", s.index, s.have, s.need and tostring(s.need) or "?")
        end
    end
    for _, env in ipairs(rec.envelopes) do
        if env.reassembled then
            local r = env.reassembled
            local etvb = ByteArray.new(r.data, true):tvb("Reassembled envelope")
            local et = add_envelope(root, etvb, 0, env, true, ctx)
            et:add(pf.env_reassembled, true):set_generated()
            et:add(pf.env_frame_count, #r.frames):set_generated()
            for _, fr in ipairs(r.frames) do
                et:add(pf.env_fragment, fr.number):append_text(string.format(" (stream offset %d, %d bytes)", fr.offset, fr.length))
            end
            ctx.summaries[#ctx.summaries] = ctx.summaries[#ctx.summaries] .. string.format(" [%d frames]", #r.frames)
        else
            add_envelope(t, ctvb, coff + env.start - 1, env, true, ctx)
        end
    end
    if rec.partial and rec.content then
        t:add(pf.undecoded, ctvb(coff + rec.partial.start - 1, rec.partial.length)):append_text(" (partial envelope)")
    end
    if rules ~= "" then
        ctx.summaries[#ctx.summaries + 1] = "[" .. rules .. "]"
    end
end

local function render(root, tvb, off, rec, ctx)
    if rec.kind == "frame" then
        return render_frame(root, tvb, off, rec, ctx)
    end
    if rec.kind == "undecoded" then
        local it = root:add(pf.undecoded, tvb(off, rec.length))
        if rec.unsynchronised then
            it:add_proto_expert_info(ef.unsynchronised, "no frame header with a valid CRC24 or envelope header at the start of this data")
        end
        if rec.orphaned then
            it:add_proto_expert_info(ef.orphaned, "the server's direction stopped at a framing error before the STARTUP response: where the client switches to framing is unknown")
        end
        if rec.after_error then
            it:add_proto_expert_info(ef.after_error, string.format("after the framing error (%s) at stream offset %d: frame boundaries are lost (RECV-11)", rec.after_error.rule, rec.after_error.offset))
        end
        local rules = add_findings(it, rec)
        ctx.summaries[#ctx.summaries + 1] = "[undecoded" .. (rules ~= "" and (" " .. rules) or "") .. "]"
        return
    end
    -- an unframed envelope
    local env = rec.envelopes[1]
    local et = add_envelope(root, tvb, off, env, false, ctx)
    et:add(pf.stream_offset, tvb(off, 9), rec.offset):set_generated()
    local rules = add_findings(et, rec)
    if rules ~= "" then
        ctx.summaries[#ctx.summaries + 1] = "[" .. rules .. "]"
    end
    if rec.switch then
        local n = rec.switch
        et:add(pf.negotiated_format, n.format):set_generated()
        et:add(pf.negotiated_checksum, n.checksum):set_generated()
        local server = n.server and string.format("; the server, which does not accept what STARTUP asked, decodes the client's frames as %s, %s", n.server.format, n.server.checksum) or ""
        et:add_proto_expert_info(ef.switch, string.format("framing starts after this envelope: %s, %s (%s)%s", n.format, n.checksum, n.reason, server))
        ctx.summaries[#ctx.summaries] = ctx.summaries[#ctx.summaries] .. string.format(" -> framing %s/%s", n.format, n.checksum)
    end
    if rec.no_switch then
        et:add_proto_expert_info(ef.no_switch, rec.no_switch)
    end
end

---------------------------------------------------------------------------------------------
-- The postdissector: each packet of a CQL connection taken in once (capture.lua judges what
-- it completes), then shown from what it completed.
---------------------------------------------------------------------------------------------
local function endpoint(addr, port) return tostring(addr) .. ":" .. tostring(port) end

-- A direction as the Info column and the direction field show it, by the sender's role.
local DIRECTIONS = {
    { arrow = "C→S", text = "client to server" },
    { arrow = "S→C", text = "server to client" },
}

local function bit_set(v, b) return math.floor(v / b) % 2 == 1 end

-- Takes packet n in: its TCP segment goes to the connection's reassembly.
local function ingest(tvb, pinfo, stream, payload)
    local n = pinfo.number
    local sport, dport = field_value(f_tcp_srcport), field_value(f_tcp_dstport)
    local flags = field_value(f_tcp_flags) or 0
    local syn, ack = bit_set(flags, 2), bit_set(flags, 16)
    local port = proto.prefs.port
    local src, dst = endpoint(pinfo.src, sport), endpoint(pinfo.dst, dport)
    local c = connections[stream]
    local d
    if c then
        d = (src == c.keys[1]) and 1 or 2
    else
        if not syn and (payload == nil or payload.range:len() == 0) and (field_value(f_tcp_len) or 0) == 0 then
            return
        end
        local client_first
        if port ~= 0 and dport == port then client_first = true
        elseif port ~= 0 and sport == port then client_first = false
        else client_first = not (syn and ack) end   -- a claimed stream: the first sender is the client
        local keys = client_first and { src, dst } or { dst, src }
        d = client_first and 1 or 2
        c = capture.new_connection(syn, keys, opts(), function(packet, item)
            local list = items[packet]
            if list == nil then list = {}; items[packet] = list end
            local cur = connections[stream].current
            if item.unit and packet == n and cur and cur[item.dir] then
                local r = cur[item.dir]
                if item.offset >= r.offset and item.offset + #item.bytes <= r.offset + r.len then
                    item.tvb_off = r.tvb_off + item.offset - r.offset
                end
            end
            list[#list + 1] = item
        end)
        connections[stream] = c
        order[#order + 1] = stream
    end
    local bytes = payload and tvb:raw(payload.offset, payload.len) or ""
    local wire = field_value(f_tcp_len) or #bytes
    local poff = payload and payload.offset or 0
    c.current = {}
    c.on_data = function(dd, x)
        if x.packet == n then
            c.current[dd] = { offset = x.offset, len = #x.bytes, tvb_off = poff + #bytes - #x.bytes }
        end
    end
    local seg = { seq = field_value(f_tcp_seq) or 0, syn = syn, fin = bit_set(flags, 1),
                  rst = bit_set(flags, 4), payload = bytes, missing = math.max(wire - #bytes, 0) }
    capture.segment_of(c, d, seg, n)
    if capture.held(c.tcp[d]) > 0 and #bytes > 0 and c.current[d] == nil then
        held[n] = { dir = d, offset = c.tcp[d].offset }
    end
    c.current = nil
    if capture.ended(c) then capture.close(c, n) end
end

-- The end of the first pass: connections still open give up their holes, in order.
local function finalise()
    finalised = true
    if not first_pass_ingested then return end
    for _, stream in ipairs(order) do capture.close(connections[stream]) end
end

local function show(tvb, pinfo, tree, payload)
    local list = items[pinfo.number]
    local h = held[pinfo.number]
    if list == nil and (h == nil or finalised) then return end
    local range = payload and payload.range or tvb()
    local root = tree:add(proto, range)
    local ctx = { summaries = {} }
    local first = nil
    for _, item in ipairs(list or {}) do
        first = first or item
        if item.note then
            root:add_proto_expert_info(ef[item.note], item.text)
            ctx.summaries[#ctx.summaries + 1] = "[" .. item.text .. "]"
        else
            local utvb, off = tvb, item.tvb_off
            if off == nil then
                utvb = ByteArray.new(item.bytes, true):tvb("CQL stream bytes")
                off = 0
            end
            render(root, utvb, off, item.unit, ctx)
        end
    end
    if h and not finalised and list == nil then
        local text = string.format("%s: bytes held behind a hole at byte %d: judged when the hole fills, or after a gap at the end of the capture (a two-pass read: Wireshark, tshark -2)", capture.DIRECTIONS[h.dir], h.offset)
        root:add_proto_expert_info(ef.capture_held, text)
        ctx.summaries[#ctx.summaries + 1] = "[held behind a hole]"
        first = { dir = h.dir }
    end
    local shown = DIRECTIONS[first.dir]
    local last = nil
    for _, item in ipairs(list or {}) do if item.unit then last = item end end
    local state = last and last.state or first.state or "capture gap"
    root:add(pf.direction, shown.text):set_generated()
    root:add(pf.mode, state):set_generated()
    root:append_text(string.format(", %s, %s", shown.arrow, state))
    if #ctx.summaries > 0 then
        pinfo.cols.protocol = "CQL"
        pinfo.cols.info = shown.arrow .. " " .. table.concat(ctx.summaries, ", ")
    end
end

-- The postdissector is the protocol itself, so that its expert infos and tree are CQLFRAME's;
-- `claim` below takes the TCP port.
function proto.dissector(tvb, pinfo, tree)
    local stream = field_value(f_tcp_stream)
    if stream == nil then return end
    local sport, dport = field_value(f_tcp_srcport), field_value(f_tcp_dstport)
    local port = proto.prefs.port
    if not (claimed[stream] or (port ~= 0 and (sport == port or dport == port))) then return end
    if pinfo.visited and not finalised then finalise() end
    local payload = f_tcp_payload()
    if not ingested[pinfo.number] then
        ingested[pinfo.number] = true
        if not pinfo.visited then first_pass_ingested = true end
        ingest(tvb, pinfo, stream, payload)
    end
    show(tvb, pinfo, tree, payload)
end
register_postdissector(proto)

-- On its port (or by Decode As, or the heuristic) a connection is only claimed: the
-- postdissector decodes it, so TCP is asked for no reassembly and no other dissector (Wireshark's
-- own CQL) takes the bytes.
local claim = Proto("cqlframe_tcp", "CQL framing: TCP connections taken for CQLFRAME")
function claim.dissector(tvb, pinfo, tree)
    local stream = field_value(f_tcp_stream)
    if stream ~= nil then claimed[stream] = true end
    return tvb:len()
end

---------------------------------------------------------------------------------------------
-- Registration: TCP port (preference), Decode As, heuristic.
---------------------------------------------------------------------------------------------
local tcp_table = DissectorTable.get("tcp.port")
local registered_port = 0
local function register_port()
    local p = proto.prefs.port
    if p == registered_port then return end
    if registered_port ~= 0 then tcp_table:remove(registered_port, claim) end
    if p ~= 0 then tcp_table:add(p, claim) end
    registered_port = p
end
register_port()
function proto.prefs_changed() register_port() end
if tcp_table.add_for_decode_as then tcp_table:add_for_decode_as(claim) end

-- Heuristic: the segment starts with a frame header whose CRC24 verifies (and, when the whole
-- frame is here, whose trailer is a CRC32 or CRC32C of the payload), or with a v5/v6 OPTIONS or
-- STARTUP request.
local crc = require("cqlframe.crc")
local function heuristic(tvb, pinfo, tree)
    if not proto.prefs.heuristic then return false end
    local len = tvb:len()
    if len < 6 then return false end
    local s = tvb:raw(0, math.min(len, 131083))
    local found = false
    for _, format in ipairs({ "uncompressed", "lz4" }) do
        if not found and len >= framing.HEADER_SIZE[format] then
            local h = framing.frame_header(s, 1, format)
            if h.crc24_ok then
                if len >= h.total then
                    local p0 = 1 + h.size
                    local trailer = framing.uint_le(s, p0 + h.length, 4)
                    local alg = h.checksum_bit and "crc32c" or "crc32"
                    found = crc.payload(alg, s, p0, p0 + h.length - 1) == trailer
                else
                    found = true
                end
            end
        end
    end
    if not found and len >= 9 and framing.plausible_envelope(s, 1) then
        local env = framing.envelope_header(s, 1)
        found = (env.protocol == 5 or env.protocol == 6) and not env.response
            and (env.opcode == 0x01 or env.opcode == 0x05) and env.length < 65536
    end
    if not found then return false end
    pinfo.conversation = claim
    claim.dissector(tvb, pinfo, tree)
    return true
end
claim:register_heuristic("tcp", heuristic)
