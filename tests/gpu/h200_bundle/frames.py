# On the GPU host, which has no ffmpeg: decodes the clip with OpenCV's bundled FFmpeg and
# writes N frames of raw yuv420p (for conveyor-bench-daemon --raw-file), then times
# OpenCV's FFmpeg MJPEG writer on the same frames as a stand-in for an ffmpeg reference.
import sys, time, os
import cv2
clip, raw_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cap = cv2.VideoCapture(clip, cv2.CAP_FFMPEG)
frames = []
t0 = time.time()
while True:
    ok, f = cap.read()
    if not ok:
        break
    frames.append(f)
decode_s = time.time() - t0
with open(raw_path, "wb") as out:
    for f in frames[:n]:
        out.write(cv2.cvtColor(f, cv2.COLOR_BGR2YUV_I420).tobytes())
print(f"opencv-ffmpeg decode: {len(frames)} frames in {decode_s:.2f} s = {len(frames)/decode_s:.1f} fps (threads {cv2.getNumThreads()})")
for q in (75, 85):
    path = f"/tmp/ref_q{q}.avi"
    w = cv2.VideoWriter(path, cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 30, (frames[0].shape[1], frames[0].shape[0]))
    w.set(cv2.VIDEOWRITER_PROP_QUALITY, q)
    t1 = time.time()
    for f in frames:
        w.write(f)
    w.release()
    enc_s = time.time() - t1
    size = os.path.getsize(path)
    print(f"opencv-ffmpeg mjpeg encode q{q}: {len(frames)/enc_s:.1f} fps, {size/len(frames):.0f} bytes/frame; decode+encode {len(frames)/(decode_s+enc_s):.1f} fps")
