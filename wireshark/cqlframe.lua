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
-- Expert info: one entry per finding key of cqlframe/framing.lua. Severity says the rule's
-- level: ERROR for a framing error, WARN for another MUST broken, NOTE for a SHOULD (a
-- recommendation) or a remark that names no rule broken, CHAT for the handshake's course.
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
    unframed_after_switch = { "Unframed envelope after the switch to framing", G.PROTOCOL, S.ERROR },
    neg_unlisted = { "FRAME_CHECKSUM not offered by the server", G.PROTOCOL, S.WARN },
    missed_refusal = { "STARTUP taken that the server must refuse", G.PROTOCOL, S.WARN },
    after_error = { "Decoded after a framing error", G.SEQUENCE, S.NOTE },
    unsynchronised = { "Not synchronised with the frame stream", G.UNDECODED, S.NOTE },
    orphaned = { "Not decoded: the server's direction stopped before the switch", G.UNDECODED, S.NOTE },
    switch = { "Switch to framing", G.SEQUENCE, S.CHAT },
    no_switch = { "No switch to framing", G.SEQUENCE, S.NOTE },
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
proto.prefs.heuristic = Pref.bool("Detect on other ports", true,
    "Claim TCP connections on other ports whose first segment starts with a frame header whose CRC24 verifies, or with a v5/v6 OPTIONS or STARTUP")
proto.prefs.max_body = Pref.uint("Envelope body limit", 16777216,
    "Flag envelopes whose body length exceeds this many bytes (RECV-12); 0: no limit")
proto.prefs.bodies = Pref.bool("Decode envelope bodies", true, "Show STARTUP/SUPPORTED maps, ERROR, QUERY, RESULT, ...")

---------------------------------------------------------------------------------------------
-- State. conversations: tcp.stream -> framing conversation (advanced on the first pass only).
-- calls: packet number -> list of { len, snapshot } per call of the dissector in that packet,
-- so that a revisit decodes from the same state as the first pass.
---------------------------------------------------------------------------------------------
local f_tcp_stream = Field.new("tcp.stream")
local f_tcp_seq = Field.new("tcp.seq")
local ok_completeness, f_tcp_completeness = pcall(Field.new, "tcp.completeness")
if not ok_completeness then f_tcp_completeness = nil end

local conversations, calls = {}, {}
local last_number, call_index = -1, 0

function proto.init()
    conversations, calls = {}, {}
    last_number, call_index = -1, 0
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

local function render_frame(root, tvb, off, rec, dir, pinfo, ctx)
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
    if rec.detected and rec.offset == dir.switch_offset_detected then
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

local function render(root, tvb, off, rec, dir, conv, pinfo, ctx)
    if rec.kind == "frame" then
        return render_frame(root, tvb, off, rec, dir, pinfo, ctx)
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
-- The dissector: one call per TCP segment (or reassembled data). Decodes every whole unit
-- (envelope or frame) and asks TCP for the rest of a partial one (desegment_offset/len).
---------------------------------------------------------------------------------------------
local function endpoint(addr, port) return tostring(addr) .. ":" .. tostring(port) end

-- A direction as the Info column and the direction field show it, by the sender's role.
local DIRECTIONS = {
    client = { arrow = "C→S", text = "client to server" },
    server = { arrow = "S→C", text = "server to client" },
    unknown = { arrow = "?→?", text = "unknown" },
}

local function dissect(tvb, pinfo, tree)
    local n = pinfo.number
    if n ~= last_number then last_number, call_index = n, 0 end
    call_index = call_index + 1

    local src = endpoint(pinfo.src, pinfo.src_port)
    local stream_key = field_value(f_tcp_stream) or (src .. "/" .. endpoint(pinfo.dst, pinfo.dst_port))
    local conv
    if not pinfo.visited then
        conv = conversations[stream_key]
        if conv == nil then
            conv = framing.new_conversation()
            conversations[stream_key] = conv
        end
        if conv.dirs[src] == nil then
            local role = nil
            local port = proto.prefs.port
            if port ~= 0 and pinfo.dst_port == port then role = "client"
            elseif port ~= 0 and pinfo.src_port == port then role = "server" end
            local d = framing.direction(conv, src, role)
            local completeness = field_value(f_tcp_completeness)
            -- the capture holds this connection's SYN (tcp.completeness bit 0) and this is the
            -- direction's first byte: its first bytes must be an envelope (LIFE-1; LIFE-3, LIFE-4)
            d.at_start = type(completeness) == "number" and completeness % 2 == 1 and field_value(f_tcp_seq) == 1
        end
        local list = calls[n]
        if list == nil then list = {}; calls[n] = list end
        list[call_index] = { len = tvb:len(), snap = framing.snapshot(conv) }
    else
        local list = calls[n]
        local c = list and list[call_index]
        if c == nil or c.len ~= tvb:len() then
            -- the packet is dissected again from its first call
            call_index = 1
            c = list and list[1]
        end
        if c == nil then return 0 end
        conv = framing.snapshot(c.snap)
    end
    local dir = conv.dirs[src]

    local len = tvb:len()
    local s = tvb:raw(0, len)
    local root = nil   -- added with the first decoded unit: a call that only asks TCP for
                       -- more bytes leaves no trace, as in the second pass
    local ctx = { summaries = {} }
    local o = opts()
    local off = 0
    while off < len do
        local size, kind, more = framing.pdu(conv, dir, s, off + 1, len - off, o)
        if size == nil then
            pinfo.desegment_offset = off
            pinfo.desegment_len = more or DESEGMENT_ONE_MORE_SEGMENT
            break
        end
        if dir.mode == "framed" and dir.detected and dir.switch_offset_detected == nil then
            dir.switch_offset_detected = dir.offset
        end
        local rec = framing.process(conv, dir, s, off + 1, size, kind, { number = n }, o)
        if root == nil then root = tree:add(proto, tvb()) end
        render(root, tvb, off, rec, dir, conv, pinfo, ctx)
        off = off + size
    end
    if root == nil then return len end
    local shown = DIRECTIONS[dir.role] or DIRECTIONS.unknown
    local state = dir.mode
    if dir.mode == "framed" then state = "framed " .. dir.format .. "/" .. dir.checksum end
    root:add(pf.direction, shown.text):set_generated()
    root:add(pf.mode, state):set_generated()
    root:append_text(string.format(", %s, %s", shown.arrow, state))
    if #ctx.summaries > 0 then
        pinfo.cols.protocol = "CQL"
        local text = table.concat(ctx.summaries, ", ")
        if call_index == 1 then
            pinfo.cols.info = shown.arrow .. " " .. text
        else
            pinfo.cols.info:append(", " .. text)
        end
    end
    return len
end

function proto.dissector(tvb, pinfo, tree)
    return dissect(tvb, pinfo, tree)
end

---------------------------------------------------------------------------------------------
-- Registration: TCP port (preference), Decode As, heuristic.
---------------------------------------------------------------------------------------------
local tcp_table = DissectorTable.get("tcp.port")
local registered_port = 0
local function register_port()
    local p = proto.prefs.port
    if p == registered_port then return end
    if registered_port ~= 0 then tcp_table:remove(registered_port, proto) end
    if p ~= 0 then tcp_table:add(p, proto) end
    registered_port = p
end
register_port()
function proto.prefs_changed() register_port() end
if tcp_table.add_for_decode_as then tcp_table:add_for_decode_as(proto) end

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
    pinfo.conversation = proto
    dissect(tvb, pinfo, tree)
    return true
end
proto:register_heuristic("tcp", heuristic)
