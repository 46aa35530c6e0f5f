-- cqlframe/cql.lua: envelope bodies in the Wireshark tree (native_protocol_v5.spec section 4).
--
-- Only what helps to follow a framed connection: STARTUP and SUPPORTED maps, ERROR code and
-- message, QUERY / PREPARE / BATCH statements, EXECUTE and PREPARED ids, RESULT kind (for Rows:
-- the column names and the row count), AUTHENTICATE's authenticator, REGISTER and EVENT types.
-- Everything else is left as body bytes. Bodies are read through a bounds-checked cursor; a
-- body that ends early raises an error that the caller turns into an expert note (a malformed
-- body is not a framing error: the spec leaves the CQL layer to the protocol spec).

local M = {}
local utf8_text = require("cqlframe.utf8").text

M.ERROR_CODES = {
    [0x0000] = "Server error", [0x000A] = "Protocol error", [0x0100] = "Bad credentials",
    [0x1000] = "Unavailable", [0x1001] = "Overloaded", [0x1002] = "Is bootstrapping",
    [0x1003] = "Truncate error", [0x1100] = "Write timeout", [0x1200] = "Read timeout",
    [0x1300] = "Read failure", [0x1400] = "Function failure", [0x1500] = "Write failure",
    [0x1600] = "CDC write failure", [0x1700] = "CAS write unknown", [0x2000] = "Syntax error",
    [0x2100] = "Unauthorized", [0x2200] = "Invalid", [0x2300] = "Config error",
    [0x2400] = "Already exists", [0x2500] = "Unprepared",
}
M.RESULT_KINDS = { [1] = "Void", [2] = "Rows", [3] = "Set_keyspace", [4] = "Prepared", [5] = "Schema_change" }
M.CONSISTENCY = {
    [0] = "ANY", [1] = "ONE", [2] = "TWO", [3] = "THREE", [4] = "QUORUM", [5] = "ALL",
    [6] = "LOCAL_QUORUM", [7] = "EACH_QUORUM", [8] = "SERIAL", [9] = "LOCAL_SERIAL", [10] = "LOCAL_ONE",
}

--- Declares the body fields on `pf` (the table of ProtoFields of the dissector).
function M.fields(pf)
    pf.option = ProtoField.none("cqlframe.option", "Option")
    pf.option_key = ProtoField.string("cqlframe.option.key", "Key")
    pf.option_value = ProtoField.string("cqlframe.option.value", "Value")
    pf.error_code = ProtoField.uint32("cqlframe.error.code", "Error code", base.HEX, M.ERROR_CODES)
    pf.error_message = ProtoField.string("cqlframe.error.message", "Error message")
    pf.query = ProtoField.string("cqlframe.query", "Statement")
    pf.consistency = ProtoField.uint16("cqlframe.consistency", "Consistency", base.HEX, M.CONSISTENCY)
    pf.prepared_id = ProtoField.bytes("cqlframe.prepared_id", "Prepared statement id")
    pf.result_kind = ProtoField.uint32("cqlframe.result.kind", "Result kind", base.DEC, M.RESULT_KINDS)
    pf.result_flags = ProtoField.uint32("cqlframe.result.flags", "Metadata flags", base.HEX)
    pf.columns_count = ProtoField.uint32("cqlframe.result.columns_count", "Columns count")
    pf.keyspace = ProtoField.string("cqlframe.result.keyspace", "Keyspace")
    pf.table = ProtoField.string("cqlframe.result.table", "Table")
    pf.column = ProtoField.string("cqlframe.result.column", "Column name")
    pf.column_type = ProtoField.uint16("cqlframe.result.column_type", "Column type", base.HEX)
    pf.rows_count = ProtoField.uint32("cqlframe.result.rows_count", "Rows count")
    pf.authenticator = ProtoField.string("cqlframe.authenticator", "Authenticator")
    pf.token_length = ProtoField.int32("cqlframe.auth.token_length", "Token length")
    pf.event_type = ProtoField.string("cqlframe.event.type", "Event type")
    pf.batch_type = ProtoField.uint8("cqlframe.batch.type", "Batch type", base.DEC, { [0] = "LOGGED", [1] = "UNLOGGED", [2] = "COUNTER" })
    pf.batch_count = ProtoField.uint16("cqlframe.batch.count", "Statements in batch")
end

-- A cursor over tvb[off, stop).
local function cursor(tvb, off, stop)
    local c = { tvb = tvb, off = off, stop = stop }
    function c.take(n)
        if n < 0 or c.off + n > c.stop then error("body ends early", 0) end
        local r = c.tvb(c.off, n)
        c.off = c.off + n
        return r
    end
    -- the readers below return the value and the range of its bytes
    function c.short() local r = c.take(2); return r:uint(), r end
    function c.int() local r = c.take(4); return r:int(), r end
    function c.byte() local r = c.take(1); return r:uint(), r end
    -- [string] / [long string] (UTF-8): the range is that of the text, without the length
    local function text(n) local r = c.take(n); return utf8_text(r:raw()), r end
    function c.string() return text((c.short())) end
    function c.long_string() return text((c.int())) end
    -- [short bytes]: the range of the bytes, without the length
    function c.short_bytes() return c.take((c.short())) end
    -- [bytes]: the range of the bytes (nil if the length is negative) and the length
    function c.bytes()
        local n = c.int()
        if n < 0 then return nil, n end
        return c.take(n), n
    end
    -- Reads a value with one of the readers and adds its range to tree as field; returns the
    -- value and the tree item.
    function c.add(tree, field, read)
        local v, r = read()
        return v, tree:add(field, r)
    end
    return c
end

-- [option] (a column type), recursively; returns the type id.
local function skip_option(c)
    local id = c.short()
    if id == 0x0000 then c.string()
    elseif id == 0x0020 or id == 0x0022 then skip_option(c)
    elseif id == 0x0021 then skip_option(c); skip_option(c)
    elseif id == 0x0030 then
        c.string(); c.string()
        local n = c.short()
        for _ = 1, n do c.string(); skip_option(c) end
    elseif id == 0x0031 then
        local n = c.short()
        for _ = 1, n do skip_option(c) end
    end
    return id
end

local function string_map(c, tree, pf, multi)
    local n = c.short()
    local summary = {}
    for _ = 1, n do
        local start = c.off
        local key, krange = c.string()
        local values, vranges = {}, {}
        if multi then
            local m = c.short()
            for k = 1, m do
                local v, vr = c.string()
                values[k], vranges[k] = v, vr
            end
        else
            local v, vr = c.string()
            values[1], vranges[1] = v, vr
        end
        local t = tree:add(pf.option, c.tvb(start, c.off - start))
        t:set_text(key .. " = " .. table.concat(values, ", "))
        t:add(pf.option_key, krange)
        for k = 1, #values do t:add(pf.option_value, vranges[k]) end
        summary[#summary + 1] = key .. "=" .. table.concat(values, ",")
    end
    return table.concat(summary, " ")
end

-- RESULT Rows: metadata then rows_count.
local function rows(c, tree, pf, protocol)
    local flags = c.add(tree, pf.result_flags, c.int)
    local count = c.add(tree, pf.columns_count, c.int)
    if flags % 4 >= 2 then c.bytes() end                                  -- Has_more_pages
    if protocol >= 5 and flags % 16 >= 8 then c.short_bytes() end         -- Metadata_changed
    local names = {}
    if flags % 8 < 4 then                                                 -- not No_metadata
        local global = flags % 2 == 1
        if global then
            c.add(tree, pf.keyspace, c.string)
            c.add(tree, pf.table, c.string)
        end
        for k = 1, count do
            if not global then c.string(); c.string() end
            local name, ti = c.add(tree, pf.column, c.string)
            local start = c.off
            local id = skip_option(c)
            ti:add(pf.column_type, c.tvb(start, 2), id)
            names[k] = name
        end
    end
    local n = c.add(tree, pf.rows_count, c.int)
    return string.format("Rows %d (%s)", n, table.concat(names, ","))
end

--- Adds the body of `env` (tvb[off, off+len)) to `tree`; returns a short summary for the Info
--- column, or nil. Raises an error on a malformed body.
function M.body(env, tvb, off, tree, pf)
    local c = cursor(tvb, off, off + env.length)
    local op = env.opcode
    if op == 0x01 then
        return string_map(c, tree, pf, false)
    elseif op == 0x06 then
        string_map(c, tree, pf, true)
        return nil
    elseif op == 0x00 then
        local code = c.add(tree, pf.error_code, c.int)
        c.add(tree, pf.error_message, c.string)
        return string.format("0x%04x %s", code % 4294967296, M.ERROR_CODES[code] or "")
    elseif op == 0x07 or op == 0x09 then
        c.add(tree, pf.query, c.long_string)
        if op == 0x07 then c.add(tree, pf.consistency, c.short) end
        return nil
    elseif op == 0x0A then
        tree:add(pf.prepared_id, c.short_bytes())
        return nil
    elseif op == 0x08 then
        local kind = c.add(tree, pf.result_kind, c.int)
        if kind == 2 then
            return rows(c, tree, pf, env.protocol)
        elseif kind == 3 then
            c.add(tree, pf.keyspace, c.string)
        elseif kind == 4 then
            tree:add(pf.prepared_id, c.short_bytes())
        end
        return M.RESULT_KINDS[kind]
    elseif op == 0x03 then
        c.add(tree, pf.authenticator, c.string)
    elseif op == 0x0B then
        local n = c.short()
        for _ = 1, n do c.add(tree, pf.event_type, c.string) end
    elseif op == 0x0C then
        return (c.add(tree, pf.event_type, c.string))
    elseif op == 0x0E or op == 0x0F or op == 0x10 then
        local start = c.off
        local _, n = c.bytes()
        tree:add(pf.token_length, tvb(start, 4), n)
    elseif op == 0x0D then
        c.add(tree, pf.batch_type, c.byte)
        local n = c.add(tree, pf.batch_count, c.short)
        for _ = 1, n do
            local kind = c.byte()
            if kind == 0 then
                c.add(tree, pf.query, c.long_string)
            else
                tree:add(pf.prepared_id, c.short_bytes())
            end
            local m = c.short()
            for _ = 1, m do c.bytes() end
        end
    end
    return nil
end

return M
