package org.cqlframe.cassandra.crc32c;

import java.lang.instrument.Instrumentation;
import java.util.Map;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.matcher.ElementMatcher;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

/**
 * Java agent that gives an Apache Cassandra 5.0 node the kit's CRC32C extension: SUPPORTED lists
 * FRAME_CHECKSUMS, STARTUP's FRAME_CHECKSUM selects the payload checksum, and framed client
 * connections use the kit's frame codecs. Started with -javaagent:crc32c-extension.jar.
 */
public final class Agent
{
    private Agent() {}

    public static void premain(String arguments, Instrumentation instrumentation)
    {
        new AgentBuilder.Default()
            .disableClassFormatChanges()
            .with(AgentBuilder.Listener.StreamWriting.toSystemError().withErrorsOnly())
            .type(named("org.apache.cassandra.transport.messages.SupportedMessage"))
            .transform(weave(Hooks.Supported.class, isConstructor().and(takesArguments(Map.class))))
            .type(named("org.apache.cassandra.transport.messages.StartupMessage"))
            .transform(weave(Hooks.Startup.class, named("execute").and(takesArguments(3))))
            .type(named("org.apache.cassandra.transport.PipelineConfigurator"))
            .transform(weave(Hooks.ModernPipeline.class, named("configureModernPipeline")))
            .transform(weave(Hooks.Decoder.class, named("frameDecoder")))
            .transform(weave(Hooks.Encoder.class, named("frameEncoder")))
            .installOn(instrumentation);
        System.err.println("cqlframe crc32c extension: FRAME_CHECKSUMS crc32, crc32c on client connections");
    }

    private static AgentBuilder.Transformer weave(Class<?> advice, ElementMatcher<? super MethodDescription> methods)
    {
        return (builder, type, loader, module, domain) -> builder.visit(Advice.to(advice).on(methods));
    }
}
