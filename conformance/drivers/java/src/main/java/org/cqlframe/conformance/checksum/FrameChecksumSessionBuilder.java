package org.cqlframe.conformance.checksum;

import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.api.core.session.ProgrammaticArguments;

/**
 * A {@code CqlSession} builder whose sessions ask every node for CRC32C frame checksums where that
 * node offers them (FRAME_CHECKSUMS in its SUPPORTED), and use CRC32 elsewhere. Use it in place of
 * {@code CqlSession.builder()}; everything else is the driver's.
 */
public final class FrameChecksumSessionBuilder extends CqlSessionBuilder {
  private final PayloadChecksum wanted;

  public FrameChecksumSessionBuilder() {
    this(PayloadChecksum.CRC32C);
  }

  /**
   * Asks for {@code wanted} where offered. With CRC32 nothing is asked (it is the default) but the
   * frames go through the same codec, which is what a benchmark of CRC32 against CRC32C compares.
   */
  public FrameChecksumSessionBuilder(PayloadChecksum wanted) {
    this.wanted = wanted;
  }

  @Override
  protected DriverContext buildContext(
      DriverConfigLoader configLoader, ProgrammaticArguments programmaticArguments) {
    return new FrameChecksumContext(configLoader, programmaticArguments, wanted);
  }
}
