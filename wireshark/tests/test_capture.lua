-- tests/test_capture.lua: the dissector's TCP reassembly (cqlframe/capture.lua) segment by
-- segment, as reference/harness/src/pcap/tcp.rs reassembles: bytes in order and once each,
-- early segments held until the hole fills, retransmitted and overlapping bytes trimmed, a hole
-- that never fills and a snap length cut reported as gaps, a FIN ending the direction once every
-- byte before it came, a RST dropping what waits; and a connection joined midway decoded from
-- its first self-contained frame whose checksums verify.
--
--   lua5.2 wireshark/tests/test_capture.lua [repo-root]     (and the same with lua5.4)

local root = arg[1] or "."
package.path = root .. "/wireshark/?.lua;" .. root .. "/wireshark/tests/lib/?.lua;" .. package.path

local capture = require("cqlframe.capture")
local crc = require("cqlframe.crc")
local t = require("harness")
local check = t.check

local ISN = 4294967290   -- sequence numbers wrap inside these streams

local function seg(offset, payload, flags)
    flags = flags or {}
    return { seq = (ISN + 1 + offset) % 4294967296, syn = flags.syn or false, fin = flags.fin or false,
             rst = flags.rst or false, payload = payload, missing = flags.missing or 0 }
end

-- Feeds the segments (offset, payload, flags) to a new stream (from its SYN, unless `joined`);
-- returns the deliveries as a string: "d<offset>:<bytes>", "g<offset>+<missing>", "e<offset>",
-- "r<offset>", in order.
local function run(segments, joined)
    local st = capture.new_stream()
    local out = {}
    local function take(x)
        if x.kind == "data" then out[#out + 1] = "d" .. x.offset .. ":" .. x.bytes
        elseif x.kind == "gap" then out[#out + 1] = "g" .. x.offset .. "+" .. x.missing
        else out[#out + 1] = (x.reset and "r" or "e") .. x.offset end
    end
    if not joined then capture.segment(st, seg(-1, "", { syn = true }), 1, take) end
    for i, s in ipairs(segments) do capture.segment(st, seg(s[1], s[2], s[3]), i + 1, take) end
    capture.flush(st, take)
    return table.concat(out, " "), st
end

local function expect(name, segments, want, joined)
    local got = run(segments, joined)
    check(got == want, name .. ": " .. got .. " (want " .. want .. ")")
end

expect("in order", { { 0, "abc" }, { 3, "de" } }, "d0:abc d3:de")
expect("out of order: held until the hole fills", { { 0, "ab" }, { 4, "ef" }, { 2, "cd" } }, "d0:ab d2:cd d4:ef")
expect("retransmitted whole", { { 0, "ab" }, { 0, "ab" }, { 2, "c" } }, "d0:ab d2:c")
expect("retransmission overlapping new bytes", { { 0, "ab" }, { 1, "bcd" } }, "d0:ab d2:cd")
expect("early segment superseded by a longer one", { { 0, "a" }, { 3, "d" }, { 3, "def" }, { 1, "bc" } }, "d0:a d1:bc d3:def")
expect("a hole that never fills is a gap at the end", { { 0, "ab" }, { 5, "fg" } }, "d0:ab g2+3 d5:fg")
expect("a snap length cut is a gap at once", { { 0, "ab", { missing = 3 } }, { 5, "f" } }, "d0:ab g2+3 d5:f")
expect("FIN after every byte", { { 0, "ab" }, { 2, "", { fin = true } } }, "d0:ab e2")
expect("FIN waits for the hole", { { 0, "a" }, { 2, "c", { fin = true } }, { 1, "b" } }, "d0:a d1:b d2:c e3")
expect("RST drops what waits", { { 0, "a" }, { 2, "c" }, { 5, "", { rst = true } } }, "d0:a r1")
expect("joined: the first data sets the start", { { 100, "xy" }, { 102, "z" } }, "d0:xy d2:z", true)

-- The limit of held bytes: past it the hole is given up as a gap.
local limit = capture.OUT_OF_ORDER_LIMIT
capture.OUT_OF_ORDER_LIMIT = 4
expect("held bytes past the limit", { { 0, "a" }, { 2, "cd" }, { 4, "efg" } }, "d0:a g1+1 d2:cd d4:efg")
capture.OUT_OF_ORDER_LIMIT = limit

-- A connection joined midway: each direction decoded from its first self-contained frame whose
-- CRC24 and payload checksum verify, after the notes that say so.
local function frame(content, self_contained)
    local n = #content
    local word = n + (self_contained and 131072 or 0)
    local head = string.char(word % 256, math.floor(word / 256) % 256, math.floor(word / 65536) % 256)
    local c24 = crc.crc24(head)
    head = head .. string.char(c24 % 256, math.floor(c24 / 256) % 256, math.floor(c24 / 65536) % 256)
    local c32 = crc.payload("crc32", content)
    return head .. content .. string.char(c32 % 256, math.floor(c32 / 256) % 256, math.floor(c32 / 65536) % 256,
        math.floor(c32 / 16777216) % 256)
end
local function query(stream, body)
    return string.char(0x85, 0, 0, stream, 0x08, 0, 0, 0, #body) .. body
end
local env = query(7, "abcdefgh")
-- a sequence in progress (its first frame is not in the capture), then a self-contained frame
local stream = frame(string.sub(env, 1, 10), false) .. frame(string.sub(env, 11), false)
    .. frame(query(8, "result"), true)
local items = {}
local conn = capture.new_connection(false, { "c:1", "s:9042" }, { verify = true, max_body = 268435456 },
    function(_, item) items[#items + 1] = item end)
local cut = 5   -- the capture starts 5 bytes into the first frame
capture.segment_of(conn, 2, seg(cut, string.sub(stream, cut + 1)), 1)
capture.close(conn)
local notes, envelopes = {}, {}
for _, item in ipairs(items) do
    if item.note then notes[#notes + 1] = item.note .. ": " .. item.text end
    if item.unit then
        for _, e in ipairs(item.unit.envelopes) do envelopes[#envelopes + 1] = e.stream end
        check(#item.unit.findings == 0, "joined: a finding on a frame seen from its middle")
    end
end
local second = #frame(string.sub(env, 1, 10), false) + #frame(string.sub(env, 11), false) - cut
check(notes[1] and notes[1]:find("^joined: joined midway") ~= nil, "joined: " .. tostring(notes[1]))
check(notes[2] == "resynchronised: server-to-client: decoding from byte " .. second .. " (v5 uncompressed crc32)",
    "joined: " .. tostring(notes[2]))
check(#envelopes == 1 and envelopes[1] == 8, "joined: envelopes " .. table.concat(envelopes, ","))

t.finish("capture")
