package io.scr.it.mapreduce;

import java.io.IOException;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;

/**
 * A map-only job that reads its input files in fixed-size chunks and writes one line per chunk:
 * {@code <file offset> TAB <CRC32 of the chunk>}. Its record reader opens the split through the
 * task's own {@link FileSystem} (whatever the job configuration makes {@code hdfs://}) and, on
 * close, adds the stream's HDFS {@code ReadStatistics} to the job counters — the only source that
 * tells short-circuit bytes from local TCP bytes ({@code HDFS_BYTES_READ} does not).
 */
final class ChunkCrcJob {
  /** Chunk size: small enough to mix sequential reads and preads across chunk boundaries. */
  static final int CHUNK = 64 * 1024;

  /** Counters filled from the task streams' {@code ReadStatistics}. */
  enum ReadStats {
    TOTAL_BYTES,
    SHORT_CIRCUIT_BYTES,
    LOCAL_BYTES,
    /** Short-circuit bytes of streams that are scr's own ({@code ScrFileSystem}'s). */
    SCR_STREAM_SHORT_CIRCUIT_BYTES
  }

  private ChunkCrcJob() {}

  static Job create(Configuration conf, Path input, Path output) throws IOException {
    Job job = Job.getInstance(conf, "scr-chunk-crc");
    job.setJarByClass(ChunkCrcJob.class);
    job.setInputFormatClass(ChunkInputFormat.class);
    job.setMapperClass(CrcMapper.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(LongWritable.class);
    job.setOutputFormatClass(TextOutputFormat.class);
    FileInputFormat.addInputPath(job, input);
    FileOutputFormat.setOutputPath(job, output);
    return job;
  }

  /** Splits files as {@link FileInputFormat} does; each record is one chunk of the split. */
  static final class ChunkInputFormat extends FileInputFormat<LongWritable, BytesWritable> {
    @Override
    public RecordReader<LongWritable, BytesWritable> createRecordReader(
        InputSplit split, TaskAttemptContext context) {
      return new ChunkReader();
    }
  }

  /** Odd chunks are read with positional reads, even ones sequentially, so both paths run. */
  static final class ChunkReader extends RecordReader<LongWritable, BytesWritable> {
    private FSDataInputStream in;
    private TaskAttemptContext context;
    private long start;
    private long end;
    private long pos;
    private int index;
    private final LongWritable key = new LongWritable();
    private final BytesWritable value = new BytesWritable();

    @Override
    public void initialize(InputSplit genericSplit, TaskAttemptContext ctx) throws IOException {
      FileSplit split = (FileSplit) genericSplit;
      this.context = ctx;
      this.start = split.getStart();
      this.end = start + split.getLength();
      this.pos = start;
      FileSystem fs = split.getPath().getFileSystem(ctx.getConfiguration());
      this.in = fs.open(split.getPath());
      in.seek(start);
    }

    @Override
    public boolean nextKeyValue() throws IOException {
      if (pos >= end) {
        return false;
      }
      int len = (int) Math.min(CHUNK, end - pos);
      byte[] chunk = new byte[len];
      if (index++ % 2 == 1) {
        in.readFully(pos, chunk);
        in.seek(pos + len);
      } else {
        in.readFully(chunk);
      }
      key.set(pos);
      value.set(chunk, 0, len);
      pos += len;
      return true;
    }

    @Override
    public LongWritable getCurrentKey() {
      return key;
    }

    @Override
    public BytesWritable getCurrentValue() {
      return value;
    }

    @Override
    public float getProgress() {
      return end == start ? 1f : (pos - start) / (float) (end - start);
    }

    @Override
    public void close() throws IOException {
      if (in == null) {
        return;
      }
      try {
        if (in instanceof HdfsDataInputStream) {
          org.apache.hadoop.hdfs.ReadStatistics stats =
              ((HdfsDataInputStream) in).getReadStatistics();
          context.getCounter(ReadStats.TOTAL_BYTES).increment(stats.getTotalBytesRead());
          context
              .getCounter(ReadStats.SHORT_CIRCUIT_BYTES)
              .increment(stats.getTotalShortCircuitBytesRead());
          context.getCounter(ReadStats.LOCAL_BYTES).increment(stats.getTotalLocalBytesRead());
          if (((HdfsDataInputStream) in)
              .getWrappedStream()
              .getClass()
              .getName()
              .equals("io.scr.core.hdfs.ScrInputStream")) {
            context
                .getCounter(ReadStats.SCR_STREAM_SHORT_CIRCUIT_BYTES)
                .increment(stats.getTotalShortCircuitBytesRead());
          }
        }
      } finally {
        in.close();
        in = null;
      }
    }
  }

  /** Emits the chunk's offset and CRC32. */
  static final class CrcMapper
      extends Mapper<LongWritable, BytesWritable, LongWritable, LongWritable> {
    private final CRC32 crc = new CRC32();
    private final LongWritable out = new LongWritable();

    @Override
    protected void map(LongWritable offset, BytesWritable chunk, Context context)
        throws IOException, InterruptedException {
      crc.reset();
      crc.update(chunk.getBytes(), 0, chunk.getLength());
      out.set(crc.getValue());
      context.write(offset, out);
    }
  }
}
