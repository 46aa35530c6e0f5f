package org.cqlframe.conformance;

import java.util.Collection;
import java.util.Iterator;
import java.util.Map;

/**
 * A minimal JSON writer for the adapter's report and cassandra/bench/ReadLoad.java (maps, lists,
 * strings, numbers, booleans, null).
 */
public final class Json {
  private Json() {}

  public static String write(Object o) {
    StringBuilder s = new StringBuilder();
    write(o, s);
    return s.toString();
  }

  private static void write(Object o, StringBuilder s) {
    if (o == null) {
      s.append("null");
    } else if (o instanceof String) {
      string((String) o, s);
    } else if (o instanceof Number || o instanceof Boolean) {
      s.append(o);
    } else if (o instanceof Map) {
      s.append('{');
      Iterator<? extends Map.Entry<?, ?>> it = ((Map<?, ?>) o).entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<?, ?> e = it.next();
        string(String.valueOf(e.getKey()), s);
        s.append(':');
        write(e.getValue(), s);
        if (it.hasNext()) {
          s.append(',');
        }
      }
      s.append('}');
    } else if (o instanceof Collection) {
      s.append('[');
      Iterator<?> it = ((Collection<?>) o).iterator();
      while (it.hasNext()) {
        write(it.next(), s);
        if (it.hasNext()) {
          s.append(',');
        }
      }
      s.append(']');
    } else {
      string(o.toString(), s);
    }
  }

  private static void string(String v, StringBuilder s) {
    s.append('"');
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      switch (c) {
        case '"':
          s.append("\\\"");
          break;
        case '\\':
          s.append("\\\\");
          break;
        case '\n':
          s.append("\\n");
          break;
        case '\r':
          s.append("\\r");
          break;
        case '\t':
          s.append("\\t");
          break;
        default:
          if (c < 0x20) {
            s.append(String.format("\\u%04x", (int) c));
          } else {
            s.append(c);
          }
      }
    }
    s.append('"');
  }
}
