"""What the pages teach with, free of streamlit: the lesson, the toy, the race, replays, the atlas,
presets, statistics and the exactness lab."""
